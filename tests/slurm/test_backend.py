"""SlurmBackend against the real cluster: submit, status, logs, list, cancel, bad input."""

from __future__ import annotations

import sys
import time

import pytest

from dolmen.errors import ExitCode, ServiceUnavailable, UsageError
from dolmen.jobs.backend import JobState, get_backend
from dolmen.jobs.spec import JobSpec
from tests.jobs.events import TOOK, submit_events, submit_job_id
from tests.slurm.cluster import SlurmCluster
from tests.slurm.helpers import backend, expected_total, output, train_spec, wait_for

pytestmark = [pytest.mark.slurm]


def _job_ids(c: SlurmCluster) -> list[str]:
    out = c.sl("squeue", "-h", "-a", "-o", "%i").stdout
    return out.split()


def test_two_node_job_runs_every_rank_with_gpus_and_rank_env(idle_cluster: SlurmCluster) -> None:
    c = idle_cluster
    b = get_backend("slurm", prefix=c.client_prefix, log_dir=str(c.lab / "out"))
    probe = (
        "import os; print(os.environ['RANK'], os.environ['LOCAL_RANK'], os.environ['WORLD_SIZE'],"
        " os.environ['GROUP_RANK'], os.environ['MASTER_ADDR'], os.environ['MASTER_PORT'],"
        " os.environ['CUDA_VISIBLE_DEVICES'], os.environ['DOLMEN_RESTART_COUNT'])"
    )
    spec = JobSpec(name="envs", command=(sys.executable, "-c", probe), nodes=2, gpus_per_node=4)
    job = b.submit(spec)
    assert job.job_id.isdigit()
    # the intent before sbatch ran, the outcome after it, with the job id sbatch gave
    assert submit_events("slurm", "envs") == TOOK
    assert submit_job_id("slurm", "envs") == job.job_id
    wait_for(lambda: b.status(job.job_id).state.done, 60, "the job to finish")
    final = b.status(job.job_id)
    assert final.state is JobState.COMPLETED, output(c, "envs", job.job_id)
    assert len(final.nodes) == 2
    rows = [line.split(": ", 1)[1].split() for line in b.logs(job.job_id) if line[:1].isdigit()]
    assert sorted(int(r[0]) for r in rows) == list(range(8))
    assert {r[2] for r in rows} == {"8"}
    assert {r[4] for r in rows} == {final.nodes[0]}  # MASTER_ADDR: the first node
    assert {r[6] for r in rows} == {"0,1,2,3"}  # 4 GRES GPUs per node
    assert {r[7] for r in rows} == {"0"}
    rank3 = list(b.logs(job.job_id, rank=3))
    assert len(rank3) == 1 and rank3[0].startswith("3: 3 3 8 0 ")
    assert any(s.job_id == job.job_id for s in b.list())


def test_training_job_completes_with_the_right_result(idle_cluster: SlurmCluster) -> None:
    c = idle_cluster
    b = backend(c)
    job = b.submit(train_spec(c, "short", steps=6, step_s=0.1, allreduce="tcp"))
    wait_for(lambda: b.status(job.job_id).state.done, 60, "the job to finish")
    assert b.status(job.job_id).state is JobState.COMPLETED
    assert f"0: done total={expected_total(6, 8)}" in output(c, "short", job.job_id)


def test_cancel_stops_a_running_job(idle_cluster: SlurmCluster) -> None:
    c = idle_cluster
    b = backend(c)
    job = b.submit(JobSpec(name="sleeper", command=("sleep", "300"), nodes=1, gpus_per_node=1))
    wait_for(lambda: b.status(job.job_id).state is JobState.RUNNING, 30, "the job to run")
    assert b.cancel(job.job_id).state is JobState.CANCELLED
    with pytest.raises(UsageError, match="unknown Slurm job"):
        b.status("999999")


@pytest.mark.parametrize(
    ("nodes", "gpus", "match"),
    [(1, 8, "no node has 8 GPUs: the most any node has is 4"), (4, 4, "4 nodes requested")],
)
def test_more_than_the_cluster_has_is_refused_and_nothing_submitted(
    idle_cluster: SlurmCluster, nodes: int, gpus: int, match: str
) -> None:
    c = idle_cluster
    before = _job_ids(c)
    spec = JobSpec(name="big", command=("true",), nodes=nodes, gpus_per_node=gpus)
    with pytest.raises(UsageError, match=match):
        backend(c).submit(spec)
    assert _job_ids(c) == before
    assert submit_events("slurm", "big") == []


def test_dead_slurmctld_is_one_clear_error_and_nothing_submitted(
    idle_cluster: SlurmCluster,
) -> None:
    c = idle_cluster
    spec = JobSpec(name="orphan", command=("true",), nodes=1, gpus_per_node=1)
    c.kill("slurmctld")
    try:
        t0 = time.monotonic()
        with pytest.raises(ServiceUnavailable) as err:
            backend(c).submit(spec)
        assert time.monotonic() - t0 < 30
        assert err.value.exit_code is ExitCode.ENVIRONMENT
        assert "slurmctld did not answer" in err.value.message
        assert "\n" not in err.value.message
    finally:
        c.restart_slurmctld()
    names = c.sl("squeue", "-h", "-a", "-o", "%j").stdout.split()
    assert "orphan" not in names
    assert submit_events("slurm", "orphan") == []
