"""Issue 9, the jobs cases: audit outcomes (2), the whole process tree (6), a lost store
(7), unbounded input (9), an overflowing --gpus (11), control characters in scripts (12)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from dolmen.audit.reader import read_entries
from dolmen.errors import ConfigError, EnvironmentProblem, UsageError
from dolmen.host.process import JobTree, pid_alive
from dolmen.jobs.backend import JobState
from dolmen.jobs.jobfile import load_jobfile
from dolmen.jobs.local.backend import LocalBackend
from dolmen.jobs.local.store import JobStore
from dolmen.jobs.local.tree import MARKER_ENV
from dolmen.jobs.spec import JobSpec
from tests.jobs.conftest import wait_for
from tests.jobs.events import FAILED, submit_events

# A rank that forks a grandchild ignoring SIGTERM, writes the grandchild's pid, then waits.
FORKER = """
import os, signal, sys, time
pid = os.fork()
if pid == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.setsid()  # out of the rank's process group and session, too
    time.sleep(600)
    os._exit(0)
part = sys.argv[1] + f"/.part-{os.environ['RANK']}"
open(part, "w").write(str(pid))
os.rename(part, sys.argv[1] + f"/grandchild-{os.environ['RANK']}")  # seen whole or not at all
time.sleep(600)
"""


def events(state: Path, action: str) -> list[tuple[str, str]]:
    log = state / "audit" / "audit.log"
    if not log.exists():
        return []
    return [
        (e.event.outcome, str(e.event.details.get("result") or e.event.details.get("phase")))
        for e in read_entries(log)
        if e.event is not None and e.event.action == action
    ]


def job_pids(marker: str) -> set[int]:
    """Every process whose environment carries the job's marker (a /proc scan)."""
    return JobTree(MARKER_ENV, marker).pids()


# --- case 2: the audit log says what happened ------------------------------------------
def test_users_add_with_a_bad_group_is_refused_before_any_event(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dolmen.cli.main import main

    assert main(["users", "add", "bob", "--group", "bad\ngroup"]) == 2
    assert "group name" in capsys.readouterr().err
    assert events(state, "users.add") == []
    assert main(["users", "add", "bob", "--group", "ml"]) == 0
    assert events(state, "users.add") == [("unknown", "intent"), ("success", "success")]


def test_quota_gpus_overflow_exits_2_with_a_hint_and_no_event(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dolmen.cli.main import main

    assert main(["quota", "set", "--user", "bob", "--gpus", "99999999999999999999"]) == 2
    err = capsys.readouterr().err
    assert "--gpus must be between 0 and" in err and "Traceback" not in err
    assert events(state, "quota.set") == []
    assert main(["quota", "set", "--user", "bob", "--gpus", "8"]) == 0
    assert events(state, "quota.set") == [("unknown", "intent"), ("success", "success")]


def test_a_change_that_fails_is_audited_as_failed(state: Path) -> None:
    from dolmen.jobs.local.accounts import LocalQuotaStore
    from dolmen.jobs.quota import Kind, Subject, set_quota

    quotas = LocalQuotaStore(LocalBackend().store)

    def broken(subject: Subject, gpus: int) -> None:
        raise OSError(28, "No space left on device")

    quotas.set_quota = broken  # type: ignore[method-assign]
    with pytest.raises(OSError):
        set_quota(quotas, Subject(Kind.USER, "bob"), 4)
    assert events(state, "quota.set") == [("unknown", "intent"), ("failure", "failed")]


def test_submit_on_a_full_disk_is_audited_as_failed_and_exits_3(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    local = LocalBackend()
    store = local.store

    def full(*a: object, **k: object) -> int:
        with store.write():
            raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(store, "create", full)
    spec = JobSpec(name="diskfull", command=(sys.executable, "-c", "pass"))
    with pytest.raises(EnvironmentProblem, match="disk is full"):
        local.submit(spec)
    assert submit_events("local", "diskfull") == FAILED


def test_cancel_is_audited_intent_then_outcome(state: Path, tmp_path: Path) -> None:
    local = LocalBackend(poll=0.05, stop_grace=1.0)
    job = local.submit(
        JobSpec(name="c", command=(sys.executable, "-c", "import time; time.sleep(60)"))
    )
    assert local.cancel(job.job_id).state is JobState.CANCELLED
    assert events(state, "jobs.cancel") == [("unknown", "intent"), ("success", "success")]


# --- case 6: the whole job goes, whoever stops it ----------------------------------------
def test_sigkilled_supervisor_then_cancel_leaves_no_process(state: Path, tmp_path: Path) -> None:
    local = LocalBackend(poll=0.05, stop_grace=1.0)
    spec = JobSpec(
        name="forker", command=(sys.executable, "-c", FORKER, str(tmp_path)), procs_per_node=2
    )
    job = local.submit(spec)
    marker = str(local.store.get(job.job_id).options["marker"])
    wait_for(lambda: len(list(tmp_path.glob("grandchild-*"))) == 2, 90, "grandchildren")
    grandchildren = [int(p.read_text()) for p in tmp_path.glob("grandchild-*")]
    assert all(pid_alive(p) for p in grandchildren)
    sup = local.store.get(job.job_id).supervisor_pid
    assert sup is not None
    os.kill(sup, signal.SIGKILL)
    wait_for(lambda: not pid_alive(sup), 30, "supervisor gone")
    assert local.cancel(job.job_id).state.done
    assert job_pids(marker) == set()
    assert not any(pid_alive(p) for p in grandchildren)


def test_status_of_a_job_whose_supervisor_died_kills_what_is_left(
    state: Path, tmp_path: Path
) -> None:
    local = LocalBackend(poll=0.05, stop_grace=1.0)
    spec = JobSpec(name="orphans", command=(sys.executable, "-c", FORKER, str(tmp_path)))
    job = local.submit(spec)
    marker = str(local.store.get(job.job_id).options["marker"])
    wait_for(lambda: list(tmp_path.glob("grandchild-*")), 90, "grandchild")
    sup = local.store.get(job.job_id).supervisor_pid
    assert sup is not None
    os.kill(sup, signal.SIGKILL)
    wait_for(lambda: not pid_alive(sup), 30, "supervisor gone")
    st = local.status(job.job_id)
    assert st.state is JobState.FAILED and st.details["gpus"] == "none"
    assert job_pids(marker) == set()


def test_cancel_is_answered_while_ranks_start(state: Path) -> None:
    local = LocalBackend(poll=0.05, stop_grace=1.0)
    spec = JobSpec(
        name="many",
        command=("sleep", "60"),  # light ranks: the test is about the cancel, not memory
        procs_per_node=32,
        nodes=4,
    )
    job = local.submit(spec)
    marker = str(local.store.get(job.job_id).options["marker"])
    started = time.monotonic()
    assert local.cancel(job.job_id).state is JobState.CANCELLED
    assert time.monotonic() - started < 30
    assert job_pids(marker) == set()


# --- case 7: a lost store is not silently replaced ---------------------------------------
@pytest.mark.parametrize("how", ["deleted", "emptied"])
def test_a_lost_jobs_db_beside_job_folders_is_refused(state: Path, how: str) -> None:
    store = JobStore()
    job_id = store.create(JobSpec(name="a", command=("true",)), "alice", {})
    (store.job_dir(job_id) / "rank-0.log").write_text("old job's log\n")
    store.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store.path}{suffix}").unlink(missing_ok=True)
    if how == "emptied":
        store.path.write_bytes(b"")
    with pytest.raises(EnvironmentProblem, match="refusing to start a new store"):
        JobStore()


def test_new_ids_number_after_existing_folders(state: Path) -> None:
    store = JobStore()
    (store.root / "7").mkdir(parents=True)
    (store.root / "7" / "rank-0.log").write_text("someone's log\n")
    job_id = store.create(JobSpec(name="a", command=("true",)), "alice", {})
    assert job_id == 8
    assert (store.root / "7" / "rank-0.log").read_text() == "someone's log\n"


# --- case 9: unbounded input ------------------------------------------------------------
def test_job_file_must_be_a_small_regular_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a regular file"):
        load_jobfile("/dev/zero")
    fifo = tmp_path / "job.fifo"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):
        load_jobfile(fifo)  # and it does not block
    big = tmp_path / "big.toml"
    big.write_bytes(b"# " + b"x" * (2 << 20) + b"\n")
    with pytest.raises(ConfigError, match="above the limit"):
        load_jobfile(big)


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"nodes": 100000000000}, "--nodes 100000000000 is above the limit of 16384"),
        ({"procs_per_node": 100000}, "--procs-per-node 100000 is above the limit of 1024"),
        ({"gpus_per_node": 99999999999999999999}, "--gpus-per-node .* is above the limit of 64"),
    ],
)
def test_nodes_ranks_and_gpus_are_capped_at_submit(
    state: Path, kw: dict[str, int], words: str
) -> None:
    with pytest.raises(UsageError, match=words):
        LocalBackend().plan(JobSpec(name="big", command=("true",), **kw))  # type: ignore[arg-type]


def test_local_backend_caps_its_ranks(state: Path) -> None:
    with pytest.raises(UsageError, match="the local backend starts at most 512"):
        LocalBackend().plan(JobSpec(name="big", command=("true",), nodes=2, procs_per_node=1000))


def test_cli_plan_of_dev_zero_exits_2(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dolmen.cli.main import main

    assert main(["jobs", "plan", "--file", "/dev/zero"]) == 2
    assert "not a regular file" in capsys.readouterr().err


# --- case 12: control characters never reach a script ----------------------------------
@pytest.mark.parametrize("field", ["partition", "account", "workdir", "checkpoint_dir", "image"])
def test_a_newline_in_a_script_field_is_refused_with_the_field_named(field: str) -> None:
    from dolmen.jobs.slurm.backend import SlurmBackend

    spec = JobSpec(name="x", command=("true",), **{field: "gpu\nrm -rf /"})  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=f"^{field} holds a control character"):
        SlurmBackend().plan(spec)


def test_env_keys_must_be_variable_names() -> None:
    with pytest.raises(UsageError, match="is not a variable name"):
        JobSpec(name="x", command=("true",), env={"A;rm -rf /;B": "1"}).check()
