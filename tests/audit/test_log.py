"""The writer: torn last lines, rotation that keeps the chain, refusing a log that lost events,
and several real processes appending at once."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dolmen.audit import record_event
from dolmen.audit.event import parse_line
from dolmen.audit.segments import segments, torn_path
from dolmen.audit.settings import AuditSettings
from dolmen.audit.verify import verify_log
from dolmen.errors import AuditUnavailable
from dolmen.keys.trust import load_trusted_keys
from tests.audit.conftest import log_lines, write_config
from tests.conftest import REPO


def _verify(settings: AuditSettings, **kw: object):  # type: ignore[no-untyped-def]
    return verify_log(settings.path, load_trusted_keys(settings.trusted_keys), **kw)  # type: ignore[arg-type]


def test_a_torn_last_line_is_kept_aside_reported_and_the_log_goes_on(
    audit_env: AuditSettings, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(3):
        record_event("tune.apply", f"t{i}")
    committed = audit_env.path.read_bytes()
    # what a crash leaves: the first 100 bytes of an append that never returned
    fragment = log_lines(audit_env.path)[-1][:100]
    audit_env.path.write_bytes(committed + fragment)
    problem = _verify(audit_env).problem
    assert problem is not None and problem.kind == "truncated" and problem.line == 4

    event = record_event("tune.apply", "after-crash")
    err = capsys.readouterr().err
    assert "torn last line" in err and str(torn_path(audit_env.path)) in err
    kept = torn_path(audit_env.path).read_bytes().splitlines()
    assert json.loads(kept[0])["bytes"] == 100 and kept[1] == fragment
    lines = log_lines(audit_env.path)
    assert b"".join(lines[:3]) == committed  # no committed event lost
    recover = parse_line(lines[3])
    assert recover.action == "audit.recover" and recover.details["bytes"] == 100
    assert event.sequence == 5 and parse_line(lines[4]) == event
    assert _verify(audit_env).ok


def test_rotation_by_size_keeps_the_chain_across_files(audit_env: AuditSettings) -> None:
    settings = write_config(audit_env, "rotate_bytes = 1500\ncheckpoint_every = 5\n")
    events = [record_event("jobs.submit", f"job:{i}") for i in range(12)]
    files = segments(settings.path)
    assert len(files) >= 4 and files[-1] == settings.path
    first_of_each = [parse_line(f.read_bytes().splitlines()[0]) for f in files]
    assert [f.name.rsplit(".", 1)[-1] for f in files[:-1]] == [
        f"{e.sequence:012d}" for e in first_of_each[:-1]
    ]
    report = _verify(settings, checkpoint_every=5)
    assert report.ok, report.problem
    assert report.last_sequence == events[-1].sequence and len(report.files) == len(files)

    middle = files[1]
    saved = middle.read_bytes()
    middle.unlink()
    problem = _verify(settings).problem
    assert problem is not None and problem.kind == "deleted" and problem.file == files[2]
    middle.write_bytes(saved)

    files[0].unlink()  # the oldest segment: a full verify misses it, one from a checkpoint not
    problem = _verify(settings).problem
    assert problem is not None and problem.kind == "deleted" and problem.line == 1
    assert _verify(settings, from_checkpoint=True).ok


def test_rotation_by_age(audit_env: AuditSettings) -> None:
    settings = write_config(audit_env, "rotate_seconds = 0.5\n")
    start = time.monotonic()
    record_event("tune.apply", "a")
    record_event("tune.apply", "b")  # same file: younger than 0.5 s (unless the machine stalled)
    stalled = time.monotonic() - start >= 0.5
    time.sleep(0.6)
    record_event("tune.apply", "c")
    assert len(segments(settings.path)) == (3 if stalled else 2)
    assert _verify(settings).ok


def test_a_log_that_lost_committed_events_is_refused(audit_env: AuditSettings) -> None:
    for i in range(3):
        record_event("tune.apply", f"t{i}")
    lines = log_lines(audit_env.path)
    audit_env.path.write_bytes(b"".join(lines[:2]))
    with pytest.raises(AuditUnavailable, match="events were removed"):
        record_event("tune.apply", "t3")
    audit_env.path.unlink()
    with pytest.raises(AuditUnavailable, match="events were removed"):
        record_event("tune.apply", "t3")


def test_an_unreadable_last_event_is_refused(audit_env: AuditSettings) -> None:
    record_event("tune.apply", "t0")
    with open(audit_env.path, "ab") as f:
        f.write(b"this is not an event\n")
    with pytest.raises(AuditUnavailable, match="unreadable"):
        record_event("tune.apply", "t1")


_WRITER = """
import sys
from dolmen.audit import EventRequest, record_event, record_events
who, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    if i % 5 == 4:
        record_events([EventRequest("jobs.gpu_allocate", f"{who}:{i}:{k}") for k in range(3)])
    else:
        record_event("jobs.submit", f"{who}:{i}", details={"writer": who, "i": i})
"""


def test_several_processes_append_at_once(audit_env: AuditSettings, tmp_path: Path) -> None:
    settings = write_config(audit_env, "checkpoint_every = 25\n")
    writers, per = 4, 30
    env = {
        "DOLMEN_STATE_DIR": str(tmp_path / "state"),
        "DOLMEN_CONFIG_DIR": str(tmp_path / "etc"),
        "PYTHONPATH": str(REPO / "src"),
        "PATH": "/usr/bin:/bin",
    }
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, f"w{k}", str(per)], env=env)
        for k in range(writers)
    ]
    try:
        assert [p.wait(timeout=120) for p in procs] == [0] * writers
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    events = [parse_line(x) for x in log_lines(settings.path)]
    report = _verify(settings, checkpoint_every=25)
    assert report.ok, report.problem
    mine = [e for e in events if e.action != "audit.checkpoint"]
    per_writer = per + (per // 5) * 2  # every fifth call writes a batch of three
    assert len(mine) == writers * per_writer
    for k in range(writers):
        targets = [e.target for e in mine if e.target.startswith(f"w{k}:")]
        assert len(targets) == per_writer
        assert [int(t.split(":")[1]) for t in targets] == sorted(
            int(t.split(":")[1]) for t in targets
        )  # each writer's events in the order it wrote them
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert sum(e.action == "audit.checkpoint" for e in events) >= len(events) // 26
