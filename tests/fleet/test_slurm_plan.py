"""The pure half of ``fleet validate --slurm``: which nodes get a task, the srun line, and
the tasks' labelled output split back per node."""

from __future__ import annotations

import base64
import gzip
import shlex
import subprocess

import pytest

from dolmen.fleet.slurm_run import MARK, decode_task, plan, remote_script, split_tasks
from dolmen.slurm.parse import NodeInfo


def _node(name: str, state: str = "IDLE", *flags: str, reason: str = "") -> NodeInfo:
    return NodeInfo(name, state, frozenset(flags), reason, 4, None)


def test_one_task_per_allocatable_node_and_the_others_named_with_why() -> None:
    nodes = [
        _node("n3", "MIXED"),
        _node("n1"),
        _node("n2", "IDLE", "DRAIN", reason="admin: fan"),
        _node("n4", "DOWN", "NOT_RESPONDING"),
        _node("n5", "ALLOCATED"),
    ]
    p = plan(nodes, partition="gpu", dolmen=("dolmen",), source="/lab/hosts/{node}")
    assert p.nodes == ("n1", "n3")
    assert p.left_out == (
        ("n2", "IDLE+DRAIN (admin: fan)"),
        ("n4", "DOWN+NOT_RESPONDING"),
        ("n5", "ALLOCATED"),
    )
    argv = list(p.argv)
    assert argv[:4] == ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1"]
    for flag in ("--nodelist=n1,n3", "--label", "--kill-on-bad-exit=0", "--partition=gpu"):
        assert flag in argv
    assert argv[-3:-1] == ["sh", "-c"]


def test_nothing_to_run_when_every_node_is_held() -> None:
    p = plan([_node("n1", "DOWN")], partition=None)
    assert p.argv == () and p.nodes == () and p.left_out[0][0] == "n1"


def test_the_remote_line_names_its_node_then_runs_validate() -> None:
    script = remote_script(("/opt/py thon", "-m", "dolmen.cli.main"), "quick", "/t/$x {node}/'")
    # run it as a task would, with a stand-in for dolmen that prints its argv
    line = script.replace(shlex.quote("/opt/py thon") + " -m dolmen.cli.main", "printf '%s\\n'")
    out = subprocess.run(
        ["sh", "-c", line],
        env={"SLURMD_NODENAME": "n7", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out[0] == f"{MARK} n7"
    assert all(len(x) <= 76 for x in out[1:])  # srun --label cuts lines over 1 KiB
    argv = decode_task(out[1:]).decode().splitlines()
    assert argv == ["validate", "--json", "--level", "quick", "--from", "/t/$x n7/'"]


@pytest.mark.parametrize(
    ("lines", "why"),
    [
        (["not base64!"], "not the base64"),
        ([base64.b64encode(b"plain").decode()], "not gzip"),
        ([base64.b64encode(gzip.compress(b"x" * 1000)[:-12]).decode()], "cut off"),
        ([base64.b64encode(gzip.compress(b"0" * 5000)).decode()], "over"),
    ],
)
def test_task_output_that_is_not_a_whole_verdict(lines: list[str], why: str) -> None:
    with pytest.raises(ValueError, match=why):
        decode_task(lines, limit=4096)


def test_labelled_output_is_split_per_task() -> None:
    stdout = "\n".join(
        [
            f"1: {MARK} n2",
            f"0: {MARK} n1",
            '0: {"schema":',
            '1: {"schema": "x"}',
            '0:  "dolmen.verdict/1"}',
            "srun: unlabelled noise",
        ]
    )
    tasks = split_tasks(stdout, "1: warning: something\n")
    assert tasks[0].node == "n1" and tasks[0].stdout == ['{"schema":', ' "dolmen.verdict/1"}']
    assert tasks[1].node == "n2" and tasks[1].stderr == ["warning: something"]
