"""``dolmen audit`` in-process: show, tail, verify (exit codes 0/1/2), checkpoint, key, export."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dolmen.audit import EventRequest, record_event, record_events
from dolmen.audit.event import parse_line
from dolmen.audit.settings import AuditSettings
from dolmen.cli.main import main
from tests.audit.conftest import log_lines
from tests.conftest import REPO
from tests.report.contract import assert_valid


@pytest.fixture
def some_events(audit_env: AuditSettings) -> AuditSettings:
    record_events(
        [
            EventRequest("tune.apply", "profile:hpc"),
            EventRequest("jobs.submit", "job:1", outcome="failure"),
            EventRequest("jobs.gpu_allocate", "gpu:0", actor="dolmen-serve"),
            EventRequest("quota.set", "group:ml"),
        ]
    )
    return audit_env


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["audit", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_show_filters_and_json(
    some_events: AuditSettings, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, _ = _run(capsys, "show")
    assert rc == 0 and len(out.splitlines()) == 4
    assert "failure jobs.submit job:1" in out and "dolmen-serve" in out
    rc, out, _ = _run(capsys, "show", "--action", "jobs.*", "--json")
    docs = [json.loads(x) for x in out.splitlines()]
    assert [d["event"]["action"] for d in docs] == ["jobs.submit", "jobs.gpu_allocate"]
    rc, out, _ = _run(capsys, "show", "--since", "1h", "--action", "quota.set")
    assert rc == 0 and out.count("\n") == 1 and "quota.set group:ml" in out
    rc, out, _ = _run(capsys, "show", "--since", "2999-01-01T00:00:00Z")
    assert rc == 0 and out == ""
    rc, _, err = _run(capsys, "show", "--since", "yesterday-ish")
    assert rc == 2 and "not a time" in err and "hint:" in err


def test_show_without_a_log(audit_env: AuditSettings, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _run(capsys, "show")
    assert rc == 2 and "no audit log yet" in err


def test_tail(some_events: AuditSettings, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "tail", "-n", "2")
    assert rc == 0 and out.splitlines()[0].split()[0] == "3" and "quota.set" in out
    rc, out, _ = _run(capsys, "tail", "-n", "1", "--json")
    assert json.loads(out)["event"]["sequence"] == 4


def test_tail_follow_sees_new_events_across_a_rotation(
    audit_env: AuditSettings, tmp_path: Path
) -> None:
    (tmp_path / "etc" / "dolmen.toml").write_text("[audit]\nrotate_bytes = 1200\n")
    record_event("tune.apply", "before")
    env = {
        "DOLMEN_STATE_DIR": str(tmp_path / "state"),
        "DOLMEN_CONFIG_DIR": str(tmp_path / "etc"),
        "PYTHONPATH": str(REPO / "src"),
        "PATH": "/usr/bin:/bin",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "dolmen.cli.main", "audit", "tail", "-f", "-n", "1"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert "tune.apply before" in proc.stdout.readline()
        time.sleep(0.3)
        for i in range(4):
            record_event("jobs.submit", f"job:{i}")
        got = [proc.stdout.readline() for _ in range(4)]
        assert [line.split()[-1] for line in got] == [f"job:{i}" for i in range(4)]
        assert len(list(audit_env.path.parent.glob("audit.log.0*"))) >= 1  # it rotated
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_verify_exit_codes(some_events: AuditSettings, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "verify")
    assert rc == 0 and out.startswith("audit log intact: 4 events")
    rc, out, _ = _run(capsys, "checkpoint")
    assert rc == 0 and out.startswith("checkpoint 5: event 4 signed by ed25519:")
    rc, out, _ = _run(capsys, "verify", "--json")
    doc = assert_valid(json.loads(out))
    assert rc == 0 and doc["intact"] and doc["checkpoints"] == 1 and doc["last_checkpoint"] == 4

    lines = log_lines(some_events.path)
    some_events.path.write_bytes(b"".join([lines[0], lines[2], lines[1], *lines[3:]]))
    rc, out, _ = _run(capsys, "verify")
    assert rc == 1 and out.startswith("audit log TAMPERED: reordered at ")
    assert f"{some_events.path}:2 (event 3)" in out
    rc, out, _ = _run(capsys, "verify", "--json")
    problem = assert_valid(json.loads(out))["problem"]
    assert rc == 1 and (problem["kind"], problem["line"]) == ("reordered", 2)
    some_events.path.write_bytes(b"".join(lines))

    some_events.trusted_keys.unlink()  # a checkpoint, and nothing to check it against
    rc, _, err = _run(capsys, "verify")
    assert rc == 2 and "no trusted keys" in err and "--trusted-keys" in err
    rc, _, err = _run(capsys, "verify", "--trusted-keys", "/nonexistent/keys")
    assert rc == 2 and "no such trusted keys file" in err
    rc, _, err = _run(capsys, "verify", "--log", str(some_events.path) + ".absent")
    assert rc == 2 and "no audit log here" in err


def test_verify_against_a_pinned_copy_of_the_trust_file(
    some_events: AuditSettings, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _run(capsys, "checkpoint")
    pinned = tmp_path / "pinned-keys"
    pinned.write_text(some_events.trusted_keys.read_text())
    some_events.trusted_keys.write_text("")  # an intruder empties the local trust file
    rc, out, _ = _run(capsys, "verify")
    assert rc == 1 and "untrusted-key" in out
    rc, out, _ = _run(capsys, "verify", "--trusted-keys", str(pinned))
    assert rc == 0 and "intact" in out


def test_key_and_rotation(some_events: AuditSettings, capsys: pytest.CaptureFixture[str]) -> None:
    rc, first, _ = _run(capsys, "key")
    assert rc == 0 and first.startswith("ed25519 1 ")
    rc, second, _ = _run(capsys, "key", "--rotate")
    assert rc == 0 and second.startswith("ed25519 2 ") and second != first
    events = [parse_line(x) for x in log_lines(some_events.path)]
    assert [e.action for e in events[-3:]] == [
        "audit.checkpoint",
        "audit.key_rotate",
        "audit.checkpoint",
    ]
    assert [(e.checkpoint or {}).get("epoch") for e in events if e.checkpoint] == [1, 2]
    rc, out, _ = _run(capsys, "verify", "--from-checkpoint")
    assert rc == 0, out
    rc, out, _ = _run(capsys, "verify")
    assert rc == 0 and "2 signed checkpoint(s)" in out


def test_checkpoint_with_a_loose_key_is_refused(
    some_events: AuditSettings, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(capsys, "key")
    some_events.key.chmod(0o644)
    rc, _, err = _run(capsys, "checkpoint")
    assert rc == 3 and "mode 0644" in err and "chmod 600" in err


def test_export_to_a_file_records_the_export(
    some_events: AuditSettings, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_file = tmp_path / "siem.cef"
    rc, out, _ = _run(capsys, "export", "--format", "cef", "--to", f"file:{out_file}")
    assert rc == 0 and "exported 4 event(s) (events 1 to 4)" in out
    assert len(out_file.read_text().splitlines()) == 4
    assert parse_line(log_lines(some_events.path)[-1]).action == "audit.export"
    rc, _, err = _run(capsys, "export", "--format", "cef", "--to", "udp://x:1")
    assert rc == 2 and "unknown scheme" in err
    rc, _, err = _run(capsys, "export", "--format", "rfc5424", "--to", "tcp://127.0.0.1:9")
    assert rc == 3 and "cannot connect" in err


def test_unwritable_log_exits_4(
    audit_env: AuditSettings, capsys: pytest.CaptureFixture[str]
) -> None:
    audit_env.path.mkdir(parents=True)
    rc, _, err = _run(capsys, "checkpoint")
    assert rc == 4 and "cannot write the audit log" in err and "hint:" in err
