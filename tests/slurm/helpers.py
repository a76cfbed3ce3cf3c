"""What the Slurm tests and the bench share: the backend for the harness, a training spec."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from dolmen.jobs.slurm.backend import SlurmBackend
from dolmen.jobs.spec import JobSpec
from tests.slurm.cluster import SlurmCluster

TRAIN = str(Path(__file__).with_name("train.py"))
RESUMED = re.compile(r"^0: resumed from step (\S+) restart=(\d+) host=(\S+)", re.MULTILINE)
# rank 0's line after it saved the checkpoint of step K (tests/slurm/train.py)
SAVED = re.compile(r"^0: step (\d+) total=", re.MULTILINE)


def backend(c: SlurmCluster, **options: object) -> SlurmBackend:
    """The Slurm backend pointed at the harness's cluster (no watcher unless ``watch=True``)."""
    options.setdefault("watch", False)
    return SlurmBackend(prefix=c.client_prefix, log_dir=str(c.lab / "out"), **options)  # type: ignore[arg-type]


def train_spec(
    c: SlurmCluster,
    name: str,
    *,
    steps: int,
    step_s: float = 0.5,
    allreduce: str = "auto",
    **kw: object,
) -> JobSpec:
    """A 2-node x 4-GPU training job (8 ranks) checkpointing into the lab."""
    env = {"STEPS": str(steps), "STEP_S": str(step_s)}
    if allreduce == "tcp":
        env["TRAIN_ALLREDUCE"] = "tcp"
    return JobSpec(
        name=name,
        command=(sys.executable, TRAIN),
        nodes=2,
        gpus_per_node=4,
        checkpoint_dir=str(c.lab / "ckpt" / name),
        max_restarts=3,
        env=env,
        **kw,  # type: ignore[arg-type]
    )


def expected_total(steps: int, world: int) -> int:
    """What train.py prints at the end, whatever restarts happened."""
    return steps * (steps + 1) // 2 * world * (world + 1) // 2


def output(c: SlurmCluster, name: str, job_id: str) -> str:
    """The job's output file (every run appended)."""
    path = c.lab / "out" / f"{name}-{job_id}.out"
    return path.read_text() if path.exists() else ""


def wait_for(pred: Callable[[], object], timeout: float, what: str) -> None:
    """Poll ``pred`` every 0.2 s; AssertionError naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.2)


class Detached:
    """A daemon we did not fork ourselves (the watcher submit starts): signal it, wait for it."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def alive(self) -> bool:
        try:
            state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state != "Z"

    def terminate(self) -> None:
        if self.alive():
            os.kill(self.pid, signal.SIGTERM)

    def wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        if self.alive():
            os.kill(self.pid, signal.SIGKILL)


def end_watcher(w: Detached | subprocess.Popen[bytes], grace: float) -> None:
    """Give a watcher ``grace`` seconds to end with its job (it then logs how the job
    ended), then stop it."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not (w.alive() if isinstance(w, Detached) else w.poll() is None):
            return
        time.sleep(0.2)
    w.terminate()
    if isinstance(w, Detached):
        w.wait(10)
    else:
        try:
            w.wait(10)
        except subprocess.TimeoutExpired:
            w.kill()
            w.wait(5)


def require_xid_detected(c: SlurmCluster) -> None:
    """Skip unless the quick checks find the Xid 79 that ``set_health`` injects."""
    from dolmen.checks.model import Level
    from dolmen.checks.suite import validate
    from dolmen.checks.verdict import Health
    from dolmen.host.tree import TreeHost
    from tests.slurm.config import set_health

    set_health(c, "n3", healthy=False)
    try:
        verdict = validate(TreeHost(c.tree("n3")), level=Level.QUICK)
    finally:
        set_health(c, "n3", healthy=True)
    if verdict.health is not Health.UNHEALTHY:
        pytest.skip(f"no quick check flags an Xid 79 in the kernel log: {verdict.health.value}")


def start_watcher(c: SlurmCluster, job_id: str, log: Path) -> subprocess.Popen[bytes]:
    """``python -m dolmen.slurm.watch`` for the job, as ``dolmen jobs`` runs it."""
    with open(log, "wb") as f:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dolmen.slurm.watch",
                job_id,
                "--poll",
                "0.5",
                "--timeout",
                "300",
                *(a for p in c.client_prefix for a in ("--prefix", p)),
            ],
            stdout=f,
            stderr=subprocess.STDOUT,
        )
