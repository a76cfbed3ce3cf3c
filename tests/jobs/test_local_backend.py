"""The local backend end to end: a supervisor that outlives the CLI, logs, cancel, failures,
GPUs shared between jobs, quotas, audit events, and bad input that submits nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dolmen.audit.reader import read_entries
from dolmen.errors import EnvironmentProblem, UsageError
from dolmen.host.process import pid_alive
from dolmen.jobs.backend import JobState, get_backend
from dolmen.jobs.local.backend import LocalBackend
from dolmen.jobs.quota import Kind, QuotaExceeded, Subject, add_user, set_quota
from dolmen.jobs.spec import JobSpec
from tests.conftest import make_tree, recording
from tests.jobs.conftest import make_local, stop_all, wait_for
from tests.jobs.events import REFUSED, TOOK, submit_events, submit_job_id

H100 = "nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml"


def done(local: LocalBackend, job_id: str, timeout: float = 30.0) -> object:
    return wait_for(
        lambda: (s := local.status(job_id)).state.done and s, timeout=timeout, what=job_id
    )


def py(code: str) -> tuple[str, ...]:
    return (sys.executable, "-c", code)


@pytest.fixture
def gpu_local(state: Path, tmp_path: Path) -> LocalBackend:
    """A local backend whose GPUs are those of a recorded 8 x H100 host tree."""
    root = make_tree(tmp_path / "h100", commands={"nvidia-smi -q -x": recording(H100).read_text()})
    backend = make_local(health_from=str(root))
    yield backend  # type: ignore[misc]
    stop_all(backend)


def audit_actions(state: Path) -> list[tuple[str, str, str]]:
    log = state / "audit" / "audit.log"
    if not log.exists():
        return []
    return [
        (e.event.action, e.event.target, e.event.outcome)
        for e in read_entries(log)
        if e.event is not None
    ]


def test_the_supervisor_outlives_the_cli(state: Path) -> None:
    cli = subprocess.Popen(
        [
            *(sys.executable, "-m", "dolmen.cli.main", "jobs", "submit", "--procs-per-node", "2"),
            *("--name", "detached", "--", sys.executable, "-c", "import time; time.sleep(1.5)"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = cli.communicate(timeout=60)
    assert cli.returncode == 0, err
    assert out.startswith("submitted job 1 (local): detached, 2 ranks")
    local = make_local()
    st = local.status("1")
    pid = int(st.details["supervisor_pid"])
    assert pid_alive(pid)  # the CLI is gone, its job goes on
    ppid = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
    assert ppid not in (cli.pid, os.getpid())  # double-forked: nobody's child to reap
    final = done(local, "1")
    assert final.state is JobState.COMPLETED  # type: ignore[attr-defined]


def test_logs_per_rank_and_follow(local: LocalBackend) -> None:
    code = (
        "import os, time\nfor i in range(3):\n"
        " print('line', i, 'of', os.environ['RANK'], flush=True); time.sleep(0.2)"
    )
    job = local.submit(JobSpec(name="chatty", command=py(code), procs_per_node=2))
    lines = list(local.logs(job.job_id, follow=True))  # returns when the job ends
    body = [line for line in lines if "--- dolmen" not in line]
    assert sorted(body) == sorted(f"[rank {r}] line {i} of {r}" for r in (0, 1) for i in range(3))
    assert list(local.logs(job.job_id, rank=1))[1:] == [f"line {i} of 1" for i in range(3)]
    with pytest.raises(UsageError, match="has no rank 5; ranks: 0-1"):
        list(local.logs(job.job_id, rank=5))
    assert (local.store.job_dir(int(job.job_id)) / "rank-1.log").is_file()


def test_cancel_stops_every_rank(local: LocalBackend, state: Path) -> None:
    job = local.submit(JobSpec(name="long", command=py("import time; time.sleep(60)"), nodes=2))
    wait_for(lambda: local.status(job.job_id).details["ranks_running"] == "2", what="ranks")
    pids = [r.pid for r in local.store.ranks(int(job.job_id))]
    final = local.cancel(job.job_id)
    assert final.state is JobState.CANCELLED and final.reason == "cancelled by the user"
    assert not any(pid_alive(p) for p in pids if p)
    assert local.cancel(job.job_id).state is JobState.CANCELLED  # twice is fine
    assert ("jobs.cancel", f"job {job.job_id}", "success") in audit_actions(state)


def test_a_failing_rank_without_restarts_fails_the_job(local: LocalBackend, state: Path) -> None:
    code = "import os, sys; sys.exit(3 if os.environ['RANK'] == '1' else 0)"
    job = local.submit(JobSpec(name="bad", command=py(code), procs_per_node=2))
    final = done(local, job.job_id)
    assert final.state is JobState.FAILED  # type: ignore[attr-defined]
    assert final.reason == "rank 1 exited with code 3; no restarts left (max 0)"  # type: ignore[attr-defined]
    actions = audit_actions(state)
    assert submit_events("local", "bad", state) == TOOK  # intent, then the outcome
    assert submit_job_id("local", "bad", state) == job.job_id
    assert ("jobs.fail", f"job {job.job_id}", "failure") in actions


def test_the_time_limit_stops_the_job(local: LocalBackend) -> None:
    spec = JobSpec(name="slow", command=py("import time; time.sleep(60)"), time_limit_s=1)
    final = done(local, local.submit(spec).job_id)
    assert final.state is JobState.FAILED and final.reason == "time limit 1s reached"  # type: ignore[attr-defined]


def test_a_dead_supervisor_is_noticed_and_takes_its_ranks(local: LocalBackend) -> None:
    job = local.submit(JobSpec(name="orphan", command=py("import time; time.sleep(60)")))
    wait_for(lambda: local.status(job.job_id).details["ranks_running"] == "1", what="rank")
    rank_pid = local.store.ranks(int(job.job_id))[0].pid
    os.kill(int(local.status(job.job_id).details["supervisor_pid"]), signal.SIGKILL)
    final = done(local, job.job_id)
    assert final.state is JobState.FAILED and "is gone" in final.reason  # type: ignore[attr-defined]
    wait_for(lambda: rank_pid and not pid_alive(rank_pid), timeout=10, what="rank to die")


def test_jobs_wait_for_gpus_another_job_holds(
    gpu_local: LocalBackend, state: Path, tmp_path: Path
) -> None:
    release = tmp_path / "release"  # the first job holds its GPUs until the test saw b wait
    hold = f"import os, time\nwhile not os.path.exists({str(release)!r}): time.sleep(0.05)"
    first = gpu_local.submit(JobSpec(name="a", command=py(hold), gpus_per_node=6))
    wait_for(lambda: gpu_local.status(first.job_id).details["ranks_running"] == "6", what="a")
    second = gpu_local.submit(JobSpec(name="b", command=py("pass"), gpus_per_node=4))
    waiting = wait_for(
        lambda: (s := gpu_local.status(second.job_id)).reason.startswith("waiting") and s
    )
    assert waiting.state is JobState.PENDING
    assert waiting.reason == f"waiting for GPUs: 2 free of 4 needed (held by job {first.job_id})"
    release.touch()
    assert done(gpu_local, second.job_id).state is JobState.COMPLETED  # type: ignore[attr-defined]
    events = gpu_local.store.events(int(second.job_id))
    assert [e.message for e in events if e.kind == "allocate"] == ["GPUs 0,1,2,3"]
    assert ("jobs.gpu_allocate", f"job {second.job_id}", "success") in audit_actions(state)


def test_quota_refuses_naming_limit_and_use(gpu_local: LocalBackend, state: Path) -> None:
    store = gpu_local.quotas()
    add_user(store, "alice", ["research"])
    set_quota(store, Subject(Kind.USER, "alice"), 4)
    set_quota(store, Subject(Kind.GROUP, "research"), 5)
    sleep = py("import time; time.sleep(30)")
    held = gpu_local.submit(JobSpec(name="a1", command=sleep, gpus_per_node=2, user="alice"))
    with pytest.raises(QuotaExceeded) as err:
        gpu_local.submit(JobSpec(name="a2", command=sleep, gpus_per_node=4, user="alice"))
    assert err.value.message == "user alice: 4 GPUs requested, 2 in use of a limit of 4"
    assert err.value.exit_code == 3
    add_user(store, "bob", ["research"])
    with pytest.raises(
        QuotaExceeded, match="group research: 4 GPUs requested, 2 in use of a limit of 5"
    ):
        gpu_local.submit(JobSpec(name="b1", command=sleep, gpus_per_node=4, user="bob"))
    assert [s.job_id for s in gpu_local.list()] == [held.job_id]  # nothing else submitted
    actions = audit_actions(state)
    assert ("users.add", "user alice", "success") in actions
    assert ("quota.set", "user alice", "success") in actions
    assert submit_events("local", "a2", state) == REFUSED
    assert submit_events("local", "a1", state) == TOOK
    gpu_local.cancel(held.job_id)
    assert store.usage(Subject(Kind.USER, "alice")) == 0
    gpu_local.submit(JobSpec(name="a3", command=py("pass"), gpus_per_node=4, user="alice"))


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        (
            JobSpec(name="x", command=("no-such-program-xyz",)),
            "'no-such-program-xyz' not found on PATH",
        ),
        (JobSpec(name="x", command=("./missing.sh",)), "'./missing.sh' not found in"),
        (
            JobSpec(name="x", command=("true",), gpus_per_node=2),
            "needs 2 GPUs (1 nodes x 2); this host has 0",
        ),
        (JobSpec(name="x", command=("true",), gpus_per_node=3, procs_per_node=2), "cannot share"),
        (JobSpec(name="x", command=("true",), workdir="/nonexistent-dir"), "does not exist"),
    ],
)
def test_bad_input_submits_nothing(
    local: LocalBackend, tmp_path: Path, spec: JobSpec, words: str
) -> None:
    # The host here has no GPU inventory of its own that tests can rely on: use an empty tree.
    local.options["health_from"] = str(make_tree(tmp_path / "no-gpus"))
    with pytest.raises(UsageError, match=words.replace("(", r"\(").replace(")", r"\)")):
        local.submit(spec)
    assert local.list() == []


def test_a_file_that_is_not_executable(local: LocalBackend, tmp_path: Path) -> None:
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    with pytest.raises(UsageError, match="not executable"):
        local.submit(JobSpec(name="x", command=(str(script),)))
    assert local.list() == []


def test_more_gpus_than_the_recorded_host_has(gpu_local: LocalBackend) -> None:
    with pytest.raises(UsageError, match=r"needs 16 GPUs \(2 nodes x 8\); this host has 8$"):
        gpu_local.submit(JobSpec(name="x", command=("true",), nodes=2, gpus_per_node=8))


def test_an_unusable_state_folder_is_the_environments_fault(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    with pytest.raises(EnvironmentProblem, match="cannot open the job store") as err:
        LocalBackend(blocker).submit(JobSpec(name="x", command=("true",)))
    assert err.value.exit_code == 3


def test_unknown_backend_names_the_valid_ones() -> None:
    with pytest.raises(
        UsageError, match="unknown backend 'nomad'; valid backends: local, slurm, kubernetes"
    ):
        get_backend("nomad")


def test_unknown_job_ids(local: LocalBackend) -> None:
    with pytest.raises(UsageError, match="no local job 42"):
        local.status("42")
    with pytest.raises(UsageError, match="not a local job id"):
        local.status("abc")


def test_status_details_are_json_friendly(local: LocalBackend) -> None:
    """``jobs status --json`` prints ``details`` as it is (no ``default=``): every key and
    value a string, as JobStatus declares, so the JSON reads back equal. Checked on the
    status of a finished job, with every detail the local backend gives filled in."""
    job = local.submit(JobSpec(name="ok", command=("true",)))
    done(local, job.job_id)
    details = dict(local.status(job.job_id).details)
    assert {"user", "created", "world_size", "gpus", "logs", "ranks_running"} <= set(details)
    assert "supervisor_pid" in details
    assert all(type(k) is str and type(v) is str for k, v in details.items()), details
    assert json.loads(json.dumps(details)) == details


def test_an_unwritable_audit_log_refuses_the_submission(state: Path, tmp_path: Path) -> None:
    """Fail closed: no audit event, no job (exit 4)."""
    from dolmen.errors import AuditUnavailable

    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the audit folder should be\n")
    etc = Path(os.environ["DOLMEN_CONFIG_DIR"])
    etc.mkdir(parents=True, exist_ok=True)
    (etc / "dolmen.toml").write_text(f'[audit]\npath = "{blocker}/audit.log"\n')
    local = make_local()
    with pytest.raises(AuditUnavailable) as err:
        local.submit(JobSpec(name="x", command=("true",)))
    assert err.value.exit_code == 4
    assert local.list() == []
    assert not any(p.name.isdigit() for p in (state / "jobs").iterdir())
