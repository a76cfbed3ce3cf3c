"""Export shapes, destinations and the spool, without a network: file: destinations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.audit import EventRequest, record_event, record_events
from dolmen.audit.event import Actor, AuditEvent, parse_line
from dolmen.audit.export import export
from dolmen.audit.export.formats import cef, render, rfc5424, structured_data
from dolmen.audit.export.spool import Pending, Spool, destination_id
from dolmen.audit.export.transport import Destination, frame, parse_destination
from dolmen.audit.settings import AuditSettings
from dolmen.errors import UsageError
from tests.audit.conftest import log_lines

EVENT = AuditEvent(
    action="quota.set",
    target='grp "ml" ]=|\\ x',
    outcome="failure",
    actor=Actor("alice", "1000", "root", "0"),
    host="node 1",
    timestamp="2026-03-01T12:00:00.000001Z",
    pid=42,
    sequence=7,
    prev_hash="a" * 64,
    hash="b" * 64,
)


def test_rfc5424_header_and_escaped_structured_data() -> None:
    msg = rfc5424(EVENT, b'{"x":1}\n')
    assert msg.startswith(b"<84>1 2026-03-01T12:00:00.000001Z node_1 dolmen 42 quota.set [")
    assert structured_data(EVENT) == (
        b'[dolmen@32473 host="node 1" seq="7" hash="' + b"b" * 64 + b'" action="quota.set" '
        b'outcome="failure" target="grp \\"ml\\" \\]=|\\\\ x" user="alice"]'
    )
    assert msg.endswith(b'] {"x":1}')


def test_cef_escapes_header_and_extension() -> None:
    record = cef(EVENT).decode()
    head, ext = record[: record.index("|rt=")], record[record.index("|rt=") + 1 :]
    assert head == r"CEF:0|dolmen|dolmen|0.1.0|quota.set|quota.set grp " + '"ml" ]=\\|\\\\ x|7'
    assert 'cs1=grp "ml" ]\\=|\\\\ x cs2Label=hash' in ext
    assert "externalId=7 " in ext and "dvchost=node 1 " in ext and "rt=1772366400000 " in ext
    assert render("cef", EVENT, b"", syslog=True).startswith(b"<84>1 ")
    assert render("cef", EVENT, b"", syslog=False).startswith(b"CEF:0|")
    with pytest.raises(ValueError):
        render("xml", EVENT, b"", syslog=False)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("tcp://127.0.0.1:514", Destination("tcp", "127.0.0.1", 514)),
        ("tls://siem.example:6514", Destination("tls", "siem.example", 6514)),
        ("file:/var/log/x.log", Destination("file", path=Path("/var/log/x.log"))),
        ("file:///var/log/x.log", Destination("file", path=Path("/var/log/x.log"))),
        ("file:rel/x.log", Destination("file", path=Path("rel/x.log"))),
    ],
)
def test_destinations(text: str, parsed: Destination) -> None:
    assert parse_destination(text) == parsed


@pytest.mark.parametrize(
    "text", ["udp://h:514", "tcp://h", "tcp://:514", "tcp://h:port", "file:", "h:514", ""]
)
def test_bad_destinations_name_the_forms(text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_destination(text)
    assert "tcp://HOST:PORT" in (info.value.hint or "")


def test_framing() -> None:
    tcp = parse_destination("tcp://h:1")
    assert frame([b"ab", b"cde"], tcp, "rfc5424") == b"2 ab3 cde"
    assert frame([b"ab", b"cde"], tcp, "json") == b"ab\ncde\n"
    assert frame([b"ab"], parse_destination("file:x"), "cef") == b"ab\n"


def test_json_export_to_a_file_is_the_log_itself(audit_env: AuditSettings, tmp_path: Path) -> None:
    record_events([EventRequest("jobs.submit", f"job:{i}") for i in range(5)])
    out = tmp_path / "siem" / "audit.json"
    with pytest.raises(UsageError, match="does not exist"):  # no silent mkdir -p
        export(audit_env, "json", f"file:{out}")
    out.parent.mkdir()
    result = export(audit_env, "json", f"file:{out}", batch_size=2)
    assert result.sent == 5 and (result.first, result.last) == (1, 5)
    assert out.read_bytes() == audit_env.path.read_bytes()
    record_event("jobs.submit", "job:5")
    assert export(audit_env, "json", f"file:{out}").sent == 1
    assert out.read_bytes() == audit_env.path.read_bytes()
    keys = [(d["host"]["name"], d["event"]["sequence"]) for d in map(json.loads, log_lines(out))]
    assert len(set(keys)) == 6  # the de-duplication key is unique per event


def test_a_batch_staged_before_a_crash_is_delivered_first(
    audit_env: AuditSettings, tmp_path: Path
) -> None:
    record_events([EventRequest("jobs.submit", f"job:{i}") for i in range(3)])
    out = tmp_path / "out.log"
    spool = Spool(audit_env.spool_dir / destination_id(f"file:{out}", "json"))
    lines = log_lines(audit_env.path)
    # a run that staged events 1-2, then died before delivering them
    spool.stage(Pending(1, 2, parse_line(lines[1]).hash or "", b"".join(lines[:2])))
    result = export(audit_env, "json", f"file:{out}")
    assert (result.resent, result.sent, result.first) == (2, 1, 3)
    assert out.read_bytes() == b"".join(lines)
    assert spool.pending() is None and spool.cursor().sequence == 3


def test_a_torn_staged_batch_or_cursor_loses_nothing(
    audit_env: AuditSettings, tmp_path: Path
) -> None:
    record_events([EventRequest("jobs.submit", f"job:{i}") for i in range(3)])
    out = tmp_path / "out.log"
    spool = Spool(audit_env.spool_dir / destination_id(f"file:{out}", "json"))
    spool.folder.mkdir(parents=True)
    (spool.folder / "pending").write_bytes(b'{"first": 1, "last"')  # torn while staging
    (spool.folder / "cursor").write_bytes(b"\x00\x00")  # damaged
    result = export(audit_env, "json", f"file:{out}")
    assert (result.resent, result.sent) == (0, 3)
    assert out.read_bytes() == audit_env.path.read_bytes()


def test_a_log_rewritten_under_the_exporter_is_reported(
    audit_env: AuditSettings, tmp_path: Path
) -> None:
    record_events([EventRequest("jobs.submit", f"job:{i}") for i in range(2)])
    out = f"file:{tmp_path / 'out.log'}"
    export(audit_env, "json", out)
    # the log is replaced by another chain (a restore from an old backup, say)
    audit_env.path.unlink()
    (audit_env.path.parent / "audit.log.head").unlink()
    record_events([EventRequest("jobs.cancel", f"job:{i}") for i in range(3)])
    result = export(audit_env, "json", out)
    assert result.sent == 1 and result.notes and "does not follow" in result.notes[0]
