"""The rank environment (one pure function for every backend) and the Slurm launcher."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dolmen.errors import InputError
from dolmen.jobs.env import (
    NAMES,
    first_host,
    rank_env,
    slurm_rank_env,
    split_gpus,
    tasks_on_node,
)
from dolmen.net.rendezvous import rendezvous_port


def test_rank_env_names_every_variable() -> None:
    env = rank_env(
        job_id="7",
        rank=5,
        local_rank=1,
        node_rank=1,
        world_size=8,
        local_world_size=4,
        num_nodes=2,
        master_addr="10.0.0.1",
        master_port=29500,
        restart_count=2,
        checkpoint_dir="/ckpt",
        gpus=(2, 3),
    )
    assert set(NAMES) <= set(env)
    assert env["RANK"] == "5" and env["LOCAL_RANK"] == "1" and env["GROUP_RANK"] == "1"
    assert env["WORLD_SIZE"] == "8" and env["LOCAL_WORLD_SIZE"] == "4"
    assert env["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert env["DOLMEN_RESTART_COUNT"] == "2" and env["DOLMEN_CHECKPOINT_DIR"] == "/ckpt"


def test_cpu_rank_sees_no_gpu_and_scheduler_ranks_keep_theirs() -> None:
    common = dict(
        job_id="1",
        rank=0,
        local_rank=0,
        node_rank=0,
        world_size=1,
        local_world_size=1,
        num_nodes=1,
        master_addr="127.0.0.1",
        master_port=1,
    )
    assert rank_env(**common, gpus=())["CUDA_VISIBLE_DEVICES"] == ""  # type: ignore[arg-type]
    assert "CUDA_VISIBLE_DEVICES" not in rank_env(**common, gpus=None)  # type: ignore[arg-type]
    assert "DOLMEN_CHECKPOINT_DIR" not in rank_env(**common)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("gpus", "ranks", "expected"),
    [
        ([0, 1, 2, 3], 4, [(0,), (1,), (2,), (3,)]),
        ([0, 1, 2, 3], 2, [(0, 1), (2, 3)]),
        ([4, 5], 4, [(4,), (5,), (4,), (5,)]),
        ([], 3, [(), (), ()]),
    ],
)
def test_split_gpus(gpus: list[int], ranks: int, expected: list[tuple[int, ...]]) -> None:
    assert split_gpus(gpus, ranks) == expected


@pytest.mark.parametrize(
    ("text", "node", "expected"),
    [
        ("4", 0, 4),
        ("2(x3),1", 2, 2),
        ("2(x3),1", 3, 1),
        ("2(x3),1", 4, None),
        ("", 0, None),
        ("x(2)", 0, None),
        ("\x00\xff", 0, None),
    ],
)
def test_tasks_on_node(text: str, node: int, expected: int | None) -> None:
    assert tasks_on_node(text, node) == expected


def test_first_host() -> None:
    assert first_host("n1") == "n1"
    assert first_host("n1,n2") == "n1"
    assert first_host("n[1-3]") is None
    assert first_host("") is None


SLURM = {
    "SLURM_JOB_ID": "42",
    "SLURM_PROCID": "5",
    "SLURM_LOCALID": "1",
    "SLURM_NODEID": "1",
    "SLURM_NTASKS": "8",
    "SLURM_NNODES": "2",
    "SLURM_TASKS_PER_NODE": "4(x2)",
    "SLURM_RESTART_COUNT": "1",
    "DOLMEN_CHECKPOINT_DIR": "/shared/ckpt",
}


def test_slurm_rank_env() -> None:
    env = slurm_rank_env(SLURM, "n1")
    assert (env["RANK"], env["LOCAL_RANK"], env["GROUP_RANK"]) == ("5", "1", "1")
    assert (env["WORLD_SIZE"], env["LOCAL_WORLD_SIZE"], env["GROUP_WORLD_SIZE"]) == ("8", "4", "2")
    assert env["MASTER_ADDR"] == "n1"
    assert env["MASTER_PORT"] == str(rendezvous_port("42", 1))  # the rule's default range
    given = slurm_rank_env({**SLURM, "DOLMEN_MASTER_PORT": "29517"}, "n1")
    assert given["MASTER_PORT"] == "29517"  # the batch script's, in the policy's range
    assert env["DOLMEN_RESTART_COUNT"] == "1" and env["DOLMEN_JOB_ID"] == "42"
    assert env["DOLMEN_CHECKPOINT_DIR"] == "/shared/ckpt"
    assert "CUDA_VISIBLE_DEVICES" not in env  # Slurm's GRES sets it


@pytest.mark.parametrize("missing", ["SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"])
def test_slurm_rank_env_names_what_is_missing(missing: str) -> None:
    env = {k: v for k, v in SLURM.items() if k != missing}
    with pytest.raises(InputError, match=missing):
        slurm_rank_env(env, "n1")
    with pytest.raises(InputError, match=missing):
        slurm_rank_env({**SLURM, missing: "five"}, "n1")


def launch(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dolmen.jobs.launch", *args],
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        timeout=30,
    )


PRINT = "import os; print(' '.join(os.environ[k] for k in ('RANK', 'MASTER_ADDR', 'GROUP_RANK')))"


def test_launcher_execs_the_command_with_the_slurm_rank_env() -> None:
    out = launch({**SLURM, "SLURM_JOB_NODELIST": "n7,n8"}, "--", sys.executable, "-c", PRINT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["5", "n7", "1"]


def test_launcher_expands_the_nodelist_with_scontrol(tmp_path: Path) -> None:
    if not any((Path(p) / "scontrol").exists() for p in os.environ["PATH"].split(":")):
        pytest.skip("scontrol is not installed (Debian slurm-client)")
    # scontrol reads a slurm.conf before anything, even to expand a host list
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=test\nSlurmctldHost=localhost\n")
    env = {**SLURM, "SLURM_JOB_NODELIST": "gpu[03-05]", "SLURM_CONF": str(conf)}
    out = launch(env, "--", sys.executable, "-c", PRINT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[1] == "gpu03"


def test_launcher_refuses_outside_slurm_and_a_missing_command() -> None:
    out = launch({}, "--", "true")
    assert out.returncode == 2 and "not inside a Slurm job step" in out.stderr
    out = launch({**SLURM, "SLURM_JOB_NODELIST": "n1"}, "--", "no-such-program-xyz")
    assert out.returncode == 2 and "no-such-program-xyz" in out.stderr
    out = launch({}, "--bogus", "x")
    assert out.returncode == 2 and "unknown option" in out.stderr


def test_launcher_runs_a_nodes_ranks_in_a_pod() -> None:
    pod = {"GROUP_RANK": "1", "GROUP_WORLD_SIZE": "2", "MASTER_ADDR": "job-0.job"}
    show = (
        "import os; print(os.environ['RANK'], os.environ['LOCAL_RANK'], os.environ['WORLD_SIZE'])"
    )
    out = launch(pod, "--procs-per-node", "3", "--", sys.executable, "-c", show)
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.splitlines()) == ["3 0 6", "4 1 6", "5 2 6"]
    fail = "import os, sys; sys.exit(3 if os.environ['LOCAL_RANK'] == '1' else 0)"
    out = launch(pod, "--procs-per-node", "2", "--", sys.executable, "-c", fail)
    assert out.returncode == 3
