"""The ``dolmen.logscan/1`` document, written from spooled events.

Each event's JSON goes to a temporary file as the scan finds it (``found``); once every
file is scanned the ``--since`` window is known (it counts back from the logs' end), and
the events it keeps are counted (``Tally``) and spooled again (``Spool``), so a log of a
million events never holds them all; the document is then written piece by piece, byte
for byte what ``json.dumps(doc, indent=2)`` would print. Its contract is the JSON Schema
``dolmen schema logscan`` prints (src/dolmen/report/schemas/logscan.schema.json).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dolmen.cli.logs import Row, Scanned

SCHEMA = "dolmen.logscan/1"


def event_doc(name: str, r: Row) -> dict[str, Any]:
    """One event as the document writes it."""
    ev, v = r.event, r.verdict
    return {
        "file": name,
        "line": ev.line_no,
        "kind": ev.kind,
        "code": ev.xid,
        "label": r.label,
        "group": r.group,
        "bus_id": ev.bus_id,
        "device": ev.device,
        "interface": ev.interface,
        "time": iso(ev.time),
        "clock": ev.clock,
        "boot_seconds": ev.boot_seconds,
        "pid": ev.pid,
        "process": ev.process,
        "fatal": ev.fatal,
        "detail": ev.detail,
        "severity": v.severity,
        "action": v.action,
        "meaning": v.meaning,
        "known": v.known,
        "message": ev.message,
    }


class Spool:
    """The JSON text of each event, in a temporary file until the document is written."""

    def __init__(self, file: IO[str]) -> None:
        self.file = file
        self.count = 0

    def add(self, doc: dict[str, Any]) -> None:
        sep = "    " if self.count == 0 else ",\n    "
        self.file.write(sep + _nested(doc, 2))
        self.count += 1


class Tally:
    """The summary's counts, kept as events are found (no list of every event)."""

    def __init__(self) -> None:
        self.severity: Counter[str] = Counter()
        self.undated = 0
        self.by_code: Counter[str] = Counter()
        self.by_group: Counter[str] = Counter()

    def add(self, doc: dict[str, Any]) -> None:
        self.severity[doc["severity"]] += 1
        self.undated += doc["time"] is None
        self.by_code[doc["label"]] += 1
        self.by_group[doc["group"]] += 1

    @property
    def critical(self) -> int:
        return self.severity["critical"]

    def summary(self) -> dict[str, Any]:
        return {
            "events": sum(self.severity.values()),
            "critical": self.severity["critical"],
            "warn": self.severity["warn"],
            "info": self.severity["info"],
            "undated": self.undated,
            "by_code": dict(self.by_code.most_common()),
            "by_group": dict(self.by_group.most_common()),
        }


def file_doc(s: Scanned, kept: int, window: dict[str, Any] | None) -> dict[str, Any]:
    """One file's entry: what it is, its span, how many events were kept and filtered, and
    the ``--since`` window as it applied to it (null without --since)."""
    return {
        "path": s.name,
        "format": s.facts.format,
        "lines": s.facts.lines,
        "first_time": iso(s.facts.first_time),
        "last_time": iso(s.facts.last_time),
        "first_boot_seconds": s.facts.first_boot_seconds,
        "last_boot_seconds": s.facts.last_boot_seconds,
        "events": kept,
        "filtered": s.found - kept,
        "window": window,
    }


def write_document(
    write: Callable[[str], object],
    files: list[dict[str, Any]],
    spool: Spool,
    tally: Tally,
    since: tuple[str, str] | None,
    code: int,
) -> None:
    """The document ``json.dumps(doc, indent=2)`` would print, written piece by piece;
    ``since`` is (the --since text, its anchor) or None."""
    text, anchor = since if since is not None else (None, None)
    write(f'{{\n  "schema": {json.dumps(SCHEMA)},\n  "since": {json.dumps(text)},\n')
    write(f'  "anchor": {json.dumps(anchor)},\n')
    write(f'  "files": {_nested(files, 1)},\n  "events": ')
    if spool.count == 0:
        write("[]")
    else:
        write("[\n")
        spool.file.seek(0)
        while chunk := spool.file.read(1 << 20):
            write(chunk)
        write("\n  ]")
    write(f',\n  "summary": {_nested(tally.summary(), 1)},\n  "exit_code": {code}\n}}\n')


def _nested(value: object, level: int) -> str:
    """``value`` as json.dumps(indent=2) prints it ``level`` levels deep (strings hold no
    raw newline: JSON escapes them)."""
    return json.dumps(value, indent=2).replace("\n", "\n" + "  " * level)


def iso(t: datetime | None) -> str | None:
    """A time as the document writes it: ISO 8601, or null."""
    return None if t is None else t.isoformat()
