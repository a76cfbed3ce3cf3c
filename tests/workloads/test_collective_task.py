"""A rank of a multi-node collective (workloads/collective_task.py): its place from Slurm's
environment, its spec, and two real task processes (gloo on loopback, Slurm's variables set
as srun sets them) that say where they are, their node's ports and rank 0's points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dolmen.workloads import collective
from dolmen.workloads.collective_task import MARK, TaskSpec, place, spec_from_arg

ROOT = Path(__file__).resolve().parents[2]


def _spec(nodes: tuple[str, ...] = ("n1", "n2"), per_node: int = 2) -> TaskSpec:
    world = len(nodes) * per_node
    sizes = {op: collective.sizes_for(op, world, collective.SMOKE_SIZES) for op in collective.OPS}
    return TaskSpec(nodes, per_node, "gloo", sizes, 5.0, 60.0, 1, 3)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"SLURMD_NODENAME": "n1", "SLURM_LOCALID": "0", "SLURM_JOB_ID": "7"}, ("n1", 0, 0, 15007)),
        (
            {"SLURMD_NODENAME": "n2", "SLURM_LOCALID": "1", "SLURM_JOB_ID": "12345"},
            ("n2", 3, 1, 17345),
        ),
    ],
)
def test_place_takes_the_rank_from_the_node_list_not_slurms_task_order(
    env: dict[str, str], expected: tuple[str, int, int, int]
) -> None:
    assert place(_spec(), env) == expected


@pytest.mark.parametrize(
    ("env", "match"),
    [
        ({"SLURMD_NODENAME": "n9", "SLURM_LOCALID": "0", "SLURM_JOB_ID": "1"}, "n9 is not one of"),
        ({"SLURMD_NODENAME": "n1", "SLURM_JOB_ID": "1"}, "must be set"),
        ({"SLURMD_NODENAME": "n1", "SLURM_LOCALID": "x", "SLURM_JOB_ID": "1"}, "must be set"),
        ({"SLURMD_NODENAME": "n1", "SLURM_LOCALID": "2", "SLURM_JOB_ID": "1"}, "past 2 ranks"),
        ({}, "node \\? is not one of"),
    ],
)
def test_place_refuses_a_task_that_is_not_the_specs(env: dict[str, str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        place(_spec(), env)


@pytest.mark.parametrize("text", ["", "[]", '{"nodes": ["n1"]}', '{"nodes": 3, "per_node": 1}'])
def test_a_bad_spec_is_one_clear_error(text: str) -> None:
    with pytest.raises(ValueError, match="not a collective task spec"):
        spec_from_arg(text)
    assert spec_from_arg(_spec().to_arg()) == _spec()


@pytest.mark.slow
def test_two_real_tasks_meet_and_measure(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    spec = _spec(("localhost",), 2)
    procs = []
    for local in range(2):
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "src"),
            "SLURMD_NODENAME": "localhost",
            "SLURM_LOCALID": str(local),
            "SLURM_JOB_ID": str(os.getpid()),
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "dolmen.workloads.collective_task", spec.to_arg()],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
        )
    try:
        outs = [p.communicate(timeout=120) for p in procs]
    finally:  # a rendezvous that hangs leaves no task behind
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    msgs = [[json.loads(x[len(MARK) + 1 :]) for x in o[0].splitlines()] for o in outs]
    assert all(line.startswith(MARK + " ") for o in outs for line in o[0].splitlines())
    assert msgs[0][0] == ["node", "localhost", 0] and msgs[1][0] == ["node", "localhost", 1]
    assert msgs[0][1][:2] == ["rails", "localhost"]  # local id 0 reports the node's ports
    assert not any(m[0] == "rails" for m in msgs[1])
    points = [m for m in msgs[0] if m[0] == "point"]
    assert {m[1] for m in points} == {"all_reduce", "all_gather"}
    assert all(m[3] > 0 for m in points) and not any(m[0] == "point" for m in msgs[1])
    assert msgs[0][-1][:2] == ["done", 0] and msgs[1][-1][:2] == ["done", 1]


def test_a_task_outside_slurm_says_why_in_one_line() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    out = subprocess.run(
        [sys.executable, "-m", "dolmen.workloads.collective_task", _spec().to_arg()],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(ROOT / "src")},
        timeout=60,
    )
    assert out.returncode == 2
    assert out.stdout == f'{MARK} ["error", null, "node ? is not one of n1, n2"]\n'
