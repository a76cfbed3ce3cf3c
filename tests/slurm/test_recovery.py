"""Health-aware recovery on the real cluster: a node dies or turns unhealthy mid-run; the
job resumes from its last checkpoint on healthy nodes and finishes with the right result."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests.slurm.cluster import SlurmCluster
from tests.slurm.config import HEALTH_CHECK_INTERVAL_S, set_health
from tests.slurm.helpers import (
    RESUMED,
    SAVED,
    Detached,
    backend,
    end_watcher,
    expected_total,
    output,
    require_xid_detected,
    start_watcher,
    train_spec,
    wait_for,
)
from tests.slurm.report import job_report

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def _run_through_fault(
    c: SlurmCluster, tmp_path: Path, name: str, inject: str, allreduce: str
) -> tuple[str, str, str]:
    """Submit, wait for step 3, inject the fault on the second node; (job id, victim, output).

    Every failure carries the job's whole story (tests/slurm/report.py)."""
    # A health fault is seen at the node's next health check (HealthCheckInterval): the
    # job must still be running by then.
    steps = 16 if inject == "crash" else 3 + 4 * HEALTH_CHECK_INTERVAL_S
    # The crash test relies on the watcher submit starts (as `dolmen jobs submit` does);
    # the health test starts `python -m dolmen.slurm.watch` itself.
    b = backend(c, watch=inject == "crash")
    spec = train_spec(c, name, steps=steps, allreduce=allreduce)
    job = b.submit(spec)
    if inject == "crash":
        watch_log = Path(job.details["watch_log"])
        watcher: Detached | subprocess.Popen[bytes] = Detached(int(job.details["watcher_pid"]))
    else:
        watch_log = tmp_path / "watch.log"
        watcher = start_watcher(c, job.job_id, watch_log)
    victim = "(not chosen yet)"

    def report(note: str = "") -> str:
        return job_report(c, name, job.job_id, watch_log=watch_log, note=f"{note}; victim {victim}")

    try:
        try:
            wait_for(lambda: "0: step 3 " in output(c, name, job.job_id), 90, "step 3")
            victim = b.status(job.job_id).nodes[1]
            if inject == "crash":
                c.crash_node(victim)
            else:
                set_health(c, victim, healthy=False)
            wait_for(lambda: b.status(job.job_id).state.done, 150, "the job to finish")
        except AssertionError as e:
            raise AssertionError(report(str(e))) from None
    finally:
        end_watcher(watcher, grace=15)  # it logs how the job ended
    final = b.status(job.job_id)
    out = output(c, name, job.job_id)
    log = watch_log.read_text()
    assert final.details["slurm_state"] == "COMPLETED", report("the job did not complete")
    assert final.restarts >= 1, report("no restart")
    assert f"0: done total={expected_total(steps, 8)}" in out, report("wrong or missing total")
    runs = RESUMED.findall(out)
    assert runs and runs[0][:2] == ("none", "0"), report("the first run did not start fresh")
    # The run after the fault resumed from a checkpoint (step 3 or later), not from zero,
    # on nodes that exclude the victim.
    later = [r for r in runs if r[1] != "0"]
    assert later and int(later[0][0]) >= 3, report("no run resumed from step 3 or later")
    assert victim not in final.nodes, report(f"{victim} still in {final.nodes}")
    assert "requeued" in log, report("the watcher requeued nothing")
    assert f"ended: COMPLETED, exit 0:0, after {final.restarts} restart" in log, report(
        "the watcher did not log the end"
    )
    return job.job_id, victim, out


def test_node_crash_mid_run_resumes_from_checkpoint(
    accounted_cluster: SlurmCluster, tmp_path: Path
) -> None:
    c = accounted_cluster
    t0 = time.monotonic()
    _, victim, _ = _run_through_fault(c, tmp_path, "crash", "crash", allreduce="auto")
    states = c.node_states()
    assert states[victim].startswith("down"), states
    assert c.node_reason(victim) == "dolmen: slurmd not responding"
    # well before Slurm itself would have declared the node down and requeued
    assert time.monotonic() - t0 < 150


def test_health_fault_drains_with_reason_and_requeues(
    accounted_cluster: SlurmCluster, tmp_path: Path
) -> None:
    c = accounted_cluster
    require_xid_detected(c)
    _, victim, _ = _run_through_fault(c, tmp_path, "health", "health", allreduce="tcp")
    reason = c.node_reason(victim)
    assert reason.startswith("dolmen: unhealthy: gpu.xid"), reason
    assert c.node_states()[victim].startswith("drain"), c.node_states()
    # healthy again: the health check itself resumes the node dolmen drained
    set_health(c, victim, healthy=True)
    wait_for(
        lambda: c.node_states().get(victim) == "idle",
        HEALTH_CHECK_INTERVAL_S * 3,
        f"{victim} resumed by the health check",
    )


def test_time_limit_signal_checkpoints_and_requeues(accounted_cluster: SlurmCluster) -> None:
    """--signal=B:USR2@30 with a 60 s limit: the ranks stop, the job requeues itself and
    resumes from its checkpoint (Slurm checks limits every ~30 s, so the signal is late)."""
    c = accounted_cluster
    b = backend(c)
    spec = train_spec(c, "limit", steps=400, allreduce="tcp", time_limit_s=60)
    assert "#SBATCH --signal=B:USR2@30" in b.plan(spec).artifacts["limit.sbatch"]
    job = b.submit(spec)
    try:
        wait_for(
            lambda: any(r[1] == "1" for r in RESUMED.findall(output(c, "limit", job.job_id))),
            150,
            "the run after the time-limit requeue",
        )
    except AssertionError as e:
        raise AssertionError(job_report(c, "limit", job.job_id, note=str(e))) from None
    out = output(c, "limit", job.job_id)
    signalled = "dolmen: time limit near: ranks checkpoint, then the job is requeued" in out
    assert signalled, job_report(c, "limit", job.job_id, note="no USR2")
    # Slurm checks limits on its own period, so USR2 may land before the first step of a
    # slow start (a loaded CI machine): what must hold is that run 1 starts from exactly
    # the last checkpoint run 0 saved (rank 0 prints "step K" after saving K, and the
    # ranks stop between steps on USR2), "none" only when run 0 saved none.
    first_run = out.split("dolmen: run 1 of job", 1)[0]
    saved = [int(k) for k in SAVED.findall(first_run)]
    resumed = next(r for r in RESUMED.findall(out) if r[1] == "1")[0]
    expected = str(max(saved)) if saved else "none"
    assert resumed == expected, job_report(
        c, "limit", job.job_id, note=f"run 1 resumed from {resumed}, run 0 saved {expected}"
    )
    b.cancel(job.job_id)
