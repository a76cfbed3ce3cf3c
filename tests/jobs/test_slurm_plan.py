"""The sbatch script SlurmBackend.plan renders (pure: no command runs, nothing is written)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from dolmen.errors import UsageError
from dolmen.host.tree import TreeHost
from dolmen.jobs.backend import get_backend
from dolmen.jobs.slurm.sbatch import SbatchOptions, render, signal_lead
from dolmen.jobs.spec import JobSpec


def _spec(**kw: object) -> JobSpec:
    base: dict[str, object] = {
        "name": "train",
        "command": ("python", "train.py", "--lr", "3e-4"),
        "nodes": 2,
        "gpus_per_node": 4,
    }
    base.update(kw)
    return JobSpec(**base)  # type: ignore[arg-type]


def _directives(script: str) -> list[str]:
    return [line.removeprefix("#SBATCH ") for line in script.splitlines() if "#SBATCH" in line]


def test_plan_renders_the_sbatch_script_without_touching_anything(tmp_path: Path) -> None:
    empty = TreeHost(tmp_path)  # any command would come back "missing"; plan runs none
    b = get_backend("slurm", host=empty, python="/opt/py/bin/python", log_dir="/shared/logs")
    spec = _spec(
        max_restarts=2,
        time_limit_s=3600,
        exclude_nodes=("n9",),
        account="research",
        checkpoint_dir="/shared/ckpt/train",
        env={"NCCL_DEBUG": "WARN", "ODD": "a b'c"},
    )
    plan = b.plan(spec)
    assert plan == b.plan(spec)
    assert list(tmp_path.iterdir()) == []
    script = plan.artifacts["train.sbatch"]
    assert _directives(script) == [
        "--job-name=train",
        "--nodes=2",
        "--ntasks-per-node=4",
        "--gpus-per-node=4",
        "--requeue",
        "--open-mode=append",
        "--output=/shared/logs/%x-%j.out",
        "--time=0-01:00:00",
        "--signal=B:USR2@300",
        "--exclude=n9",
        "--account=research",
    ]
    assert "export DOLMEN_CHECKPOINT_DIR=/shared/ckpt/train" in script
    assert "export ODD='a b'\"'\"'c'" in script
    assert (
        "srun --label --kill-on-bad-exit=1 /opt/py/bin/python -m dolmen.jobs.launch -- "
        "python train.py --lr 3e-4 &"
    ) in script
    assert "trap on_signal USR2" in script
    assert "requeue on faults" in plan.summary


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_the_script_is_valid_bash(tmp_path: Path) -> None:
    spec = _spec(time_limit_s=600, max_restarts=1, env={"A": "$(rm -rf /)"})
    script = render(spec, SbatchOptions())
    path = tmp_path / "job.sbatch"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0
    assert "export A='$(rm -rf /)'" in script  # quoted: never run


def test_cpu_job_has_no_gres_and_one_rank_per_node() -> None:
    script = render(_spec(gpus_per_node=0), SbatchOptions())
    assert "--gpus-per-node" not in script
    assert "#SBATCH --ntasks-per-node=1" in script
    assert "--time" not in script and "--signal" not in script


def test_no_restarts_allowed_means_no_checkpoint_and_requeue_at_the_time_limit() -> None:
    script = render(_spec(time_limit_s=600), SbatchOptions())
    # --requeue stays: Slurm still starts the job elsewhere when a prolog refuses a node
    assert "#SBATCH --requeue" in script
    assert "#SBATCH --time=0-00:10:00" in script and "--signal" not in script


def test_site_exclusions_merge_with_the_job_s() -> None:
    opts = SbatchOptions(exclude=("n3", "n1"))
    script = render(_spec(exclude_nodes=("n2", "n3")), opts)
    assert "#SBATCH --exclude=n1,n2,n3" in script


@pytest.mark.parametrize(
    ("limit", "lead", "expected"),
    [
        (3600, None, 300),
        (600, None, 60),
        (120, None, 30),
        (40, None, 20),
        (7200, 90, 90),
        (2, 60, 1),
    ],
)
def test_signal_lead(limit: int, lead: int | None, expected: int) -> None:
    assert signal_lead(limit, lead) == expected


def test_plan_refuses_a_spec_no_backend_could_run(tmp_path: Path) -> None:
    b = get_backend("slurm", host=TreeHost(tmp_path))
    with pytest.raises(UsageError, match="no command given"):
        b.plan(_spec(command=()))
