"""record_event: durable, chained, ECS-named events; fail closed unless told to fail open."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.audit import EventRequest, record_event, record_events
from dolmen.audit.event import GENESIS, parse_line
from dolmen.audit.settings import AuditSettings
from dolmen.errors import AuditUnavailable, ExitCode
from tests.audit.conftest import log_lines, write_config
from tests.conftest import fill_disk


def test_events_are_chained_with_ecs_names(audit_env: AuditSettings) -> None:
    first = record_event("tune.apply", "sysctl:vm.swappiness", details={"from": 60, "to": 10})
    second = record_event("jobs.submit", "job:42", outcome="failure", actor="dolmen-serve")
    assert first.sequence == 1 and first.prev_hash == GENESIS and first.written
    assert second.sequence == 2 and second.prev_hash == first.hash
    lines = log_lines(audit_env.path)
    assert len(lines) == 2 and all(line.endswith(b"\n") for line in lines)
    doc = json.loads(lines[0])
    assert doc["event"]["action"] == "tune.apply"
    assert doc["event"]["outcome"] == "success"
    assert doc["event"]["sequence"] == 1
    assert doc["event"]["hash"] == first.hash
    assert doc["dolmen"]["details"] == {"from": 60, "to": 10}
    assert doc["dolmen"]["target"] == "sysctl:vm.swappiness"
    assert doc["@timestamp"].endswith("Z") and doc["host"]["name"]
    assert doc["ecs"]["version"]
    assert doc["user"]["effective"]["id"] == str(__import__("os").geteuid())
    again = parse_line(lines[1])
    assert again == second
    assert again.actor.name == "dolmen-serve" and again.outcome == "failure"


def test_group_commit_keeps_order(audit_env: AuditSettings) -> None:
    events = record_events([EventRequest("jobs.gpu_allocate", f"gpu:{i}") for i in range(50)])
    assert [e.sequence for e in events] == list(range(1, 51))
    assert [parse_line(x).target for x in log_lines(audit_env.path)] == [
        f"gpu:{i}" for i in range(50)
    ]


@pytest.mark.parametrize(
    ("action", "outcome"),
    [("Tune.Apply", "success"), ("tune", "success"), ("tune.apply", "ok"), ("a..b", "success")],
)
def test_caller_mistakes_are_value_errors(
    audit_env: AuditSettings, action: str, outcome: str
) -> None:
    with pytest.raises(ValueError):
        record_event(action, "x", outcome=outcome)
    assert not audit_env.path.exists()


def test_checkpoint_action_is_reserved(audit_env: AuditSettings) -> None:
    with pytest.raises(ValueError, match="reserved"):
        record_event("audit.checkpoint", "audit-log")


def test_fails_closed_when_the_log_folder_is_a_file(audit_env: AuditSettings) -> None:
    blocker = audit_env.path.parent
    blocker.parent.mkdir(parents=True)
    blocker.write_text("not a folder")
    with pytest.raises(AuditUnavailable) as info:
        record_event("tune.apply", "sysctl:vm.swappiness")
    assert info.value.exit_code == ExitCode.AUDIT == 4
    assert str(audit_env.path) in info.value.message
    assert info.value.hint and "fail_open" in info.value.hint


def test_fails_closed_when_the_log_is_a_directory(audit_env: AuditSettings) -> None:
    audit_env.path.mkdir(parents=True)
    with pytest.raises(AuditUnavailable, match="cannot write the audit log"):
        record_event("tune.apply", "x")


def test_fail_open_by_env_warns_once_and_returns(
    audit_env: AuditSettings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    audit_env.path.mkdir(parents=True)
    monkeypatch.setenv("DOLMEN_AUDIT_FAIL_OPEN", "1")
    event = record_event("tune.apply", "x")
    assert not event.written and event.sequence is None
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "NOT audited" in err[0] and "WARNING" in err[0]


def test_fail_open_by_config(audit_env: AuditSettings, capsys: pytest.CaptureFixture[str]) -> None:
    write_config(audit_env, "fail_open = true\n")
    audit_env.path.mkdir(parents=True)
    assert not record_event("tune.apply", "x").written
    assert "NOT audited" in capsys.readouterr().err


def test_disk_full_fails_closed_with_a_hint(audit_env: AuditSettings, small_tmpfs: Path) -> None:
    write_config(audit_env, f'path = "{small_tmpfs}/audit/audit.log"\n')
    (small_tmpfs / "audit").mkdir()
    record_event("tune.apply", "before")  # the log and its head exist, then the disk fills
    log = small_tmpfs / "audit" / "audit.log"
    before = log.read_bytes()
    fill_disk(small_tmpfs / "filler")
    with pytest.raises(AuditUnavailable) as info:
        record_event("tune.apply", "x", details={"pad": "y" * 8192})
    assert "(the disk is full)" in info.value.message
    assert info.value.hint and "free space" in info.value.hint
    assert log.read_bytes() == before  # nothing half-written stays behind
    (small_tmpfs / "filler").unlink()
    assert record_event("tune.apply", "after").sequence == 2
