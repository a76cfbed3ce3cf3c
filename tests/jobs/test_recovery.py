"""A two-"node", four-rank training job on the local backend survives a rank killed by
SIGKILL: the supervisor stops the others, restarts every rank from the last complete
checkpoint, and the job ends with exactly the weights of an uninterrupted run.

Nodes are rank groups on this host (GROUP_RANK 0 and 1, two ranks each); the ranks talk
over loopback. Real processes throughout: the detached supervisor, the ranks, the kill.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from dolmen.audit.reader import read_entries
from dolmen.jobs import checkpoint
from dolmen.jobs.backend import JobState, JobStatus
from dolmen.jobs.local.backend import LocalBackend
from dolmen.jobs.spec import JobSpec
from tests.jobs.conftest import WORKLOADS, wait_for
from tests.jobs.events import TOOK, submit_events

STEPS = 30
KILL_AT = 8


def run(
    local: LocalBackend, script: str, tmp: Path, name: str, *, kill_at: int | None
) -> tuple[JobStatus, dict[str, Any]]:
    ckdir, result = tmp / f"{name}-ckpt", tmp / f"{name}.json"
    spec = JobSpec(
        name=name,
        command=(sys.executable, str(WORKLOADS / script), str(STEPS), str(result), "0.05"),
        nodes=2,
        procs_per_node=2,
        checkpoint_dir=str(ckdir),
        max_restarts=2,
        env={"GLOO_SOCKET_IFNAME": "lo"},
    )
    job = local.submit(spec)
    if kill_at is not None:
        wait_for(
            lambda: (ck := checkpoint.latest(ckdir)) is not None and ck.step >= kill_at,
            timeout=90,
            what=f"checkpoint step {kill_at}",
        )
        victim = next(r for r in local.store.ranks(int(job.job_id)) if r.rank == 2)
        assert victim.pid is not None
        os.kill(victim.pid, signal.SIGKILL)
    final = wait_for(
        lambda: (st := local.status(job.job_id)).state.done and st, timeout=120, what=name
    )
    assert final.state is JobState.COMPLETED, (final, local.store.events(int(job.job_id)))
    return final, json.loads(result.read_text())


def check_recovered(local: LocalBackend, final: JobStatus, doc: dict[str, Any]) -> None:
    assert final.restarts == 1
    assert doc["restart"] == 1
    assert KILL_AT <= doc["resumed_from"] < STEPS
    events = local.store.events(int(final.job_id))
    restart = [e.message for e in events if e.kind == "restart"]
    assert len(restart) == 1
    assert "rank 2 killed by SIGKILL" in restart[0]
    assert f"from checkpoint step {doc['resumed_from']}" in restart[0]
    audit_log = Path(os.environ["DOLMEN_STATE_DIR"]) / "audit" / "audit.log"
    actions = [
        (e.event.action, e.event.target) for e in read_entries(audit_log) if e.event is not None
    ]
    target = f"job {final.job_id}"
    assert [a for a, t in actions if t == target] == ["jobs.restart"]
    assert submit_events("local", final.name, audit_log.parent.parent) == TOOK
    log = "\n".join(local.logs(final.job_id, rank=2))
    assert "attempt 0" in log and "attempt 1" in log
    assert f"restart 1 resumed from step {doc['resumed_from']}" in log


def test_pure_python_allreduce_job_resumes_after_sigkill(
    local: LocalBackend, tmp_path: Path
) -> None:
    _, clean = run(local, "train_tcp.py", tmp_path, "tcp-clean", kill_at=None)
    final, hit = run(local, "train_tcp.py", tmp_path, "tcp-hit", kill_at=KILL_AT)
    check_recovered(local, final, hit)
    assert clean["restart"] == 0 and clean["resumed_from"] == 0
    # Gradients are summed in rank order: the resumed run is bitwise the same run.
    assert hit["w"] == clean["w"]
    assert hit["loss"] == clean["loss"] < 0.01


def test_torch_gloo_job_resumes_after_sigkill(local: LocalBackend, tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0)")
    _, clean = run(local, "train_torch.py", tmp_path, "torch-clean", kill_at=None)
    final, hit = run(local, "train_torch.py", tmp_path, "torch-hit", kill_at=KILL_AT)
    check_recovered(local, final, hit)
    assert clean["restart"] == 0
    assert hit["weight"] == pytest.approx(clean["weight"], abs=1e-6)
    assert hit["bias"] == pytest.approx(clean["bias"], abs=1e-6)
    assert hit["loss"] == pytest.approx(clean["loss"], abs=1e-7)
