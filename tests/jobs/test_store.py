"""The SQLite job store: WAL, one writer at a time, readers never blocked or refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dolmen.jobs.backend import JobState
from dolmen.jobs.local.store import JobStore, RankRow, spec_from_json, spec_to_json
from dolmen.jobs.spec import JobSpec

WRITER = """
import sys
from pathlib import Path
from dolmen.jobs.local.store import JobStore
store = JobStore(Path(sys.argv[1]))
for i in range(200):
    store.event(1, "tick", f"{sys.argv[2]} {i}")
    store.update(1, reason=f"{sys.argv[2]} {i}")
"""


def test_spec_round_trip() -> None:
    spec = JobSpec(
        name="t",
        command=("python", "x.py"),
        nodes=2,
        gpus_per_node=4,
        env={"A": "1"},
        exclude_nodes=("n3",),
        time_limit_s=60,
        elastic=True,
    )
    assert spec_from_json(spec_to_json(spec)) == spec


def test_concurrent_writers_and_a_reader(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    job_id = store.create(JobSpec(name="t", command=("true",)), "alice", {})
    assert job_id == 1
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), name]) for name in ("a", "b")
    ]
    reads = 0
    while any(w.poll() is None for w in writers):
        job = store.get(1)  # never "database is locked"
        assert job.state is JobState.PENDING
        reads += 1
    assert [w.returncode for w in writers] == [0, 0]
    ticks = [e for e in store.events(1) if e.kind == "tick"]
    assert len(ticks) == 400 and reads > 0


def test_claim_gives_each_gpu_to_one_job(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    a = store.create(JobSpec(name="a", command=("true",)), "u", {})
    b = store.create(JobSpec(name="b", command=("true",)), "u", {})
    assert store.claim(a, lambda busy: [0, 1] if not busy else None) == [0, 1]
    assert store.claim(b, lambda busy: None if set(busy) == {0, 1} else [0]) is None
    assert store.gpus_in_use() == {0: a, 1: a}
    store.update(a, state=JobState.COMPLETED, gpus=[])
    assert store.claim(b, lambda busy: [0, 1, 2] if not busy else None) == [0, 1, 2]


def test_ranks_and_events(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    j = store.create(JobSpec(name="a", command=("true",)), "u", {"poll": 0.1})
    store.set_ranks(j, [RankRow(0, 0, 0, (3,), 123, None, 0)])
    store.set_ranks(j, [RankRow(0, 0, 0, (4,), 456, 0, 1), RankRow(1, 0, 1, (5,), 457, 0, 1)])
    assert [r.gpus for r in store.ranks(j)] == [(4,), (5,)]
    assert store.get(j).options == {"poll": 0.1}
    assert [e.kind for e in store.events(j)] == ["submitted"]


def test_a_failing_before_hook_stores_nothing(tmp_path: Path) -> None:
    store = JobStore(tmp_path)

    def refuse() -> None:
        raise RuntimeError("over quota")

    with pytest.raises(RuntimeError):
        store.create(JobSpec(name="a", command=("true",)), "u", {}, before=refuse)
    assert store.jobs() == []
