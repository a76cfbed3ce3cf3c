"""``dolmen audit export``: ship the log to a SIEM, at least once, with de-duplication keys.

Each run first re-delivers a batch a previous run left in flight, then sends every
event after the spool's cursor, in batches: stage (fsync), deliver, move the cursor.
See spool.py for the guarantees and transport.py for what "delivered" means.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from dolmen.audit.export.formats import FORMATS, render
from dolmen.audit.export.spool import Pending, Spool, destination_id
from dolmen.audit.export.transport import TlsFiles, deliver, frame, parse_destination
from dolmen.audit.reader import Entry, read_entries
from dolmen.audit.settings import AuditSettings
from dolmen.errors import UsageError
from dolmen.fsutil import output_target

__all__ = ["FORMATS", "ExportResult", "TlsFiles", "export"]


@dataclass
class ExportResult:
    """What one export run delivered."""

    destination: str
    format: str
    sent: int = 0
    resent: int = 0
    first: int | None = None
    last: int | None = None
    skipped: list[str] = field(default_factory=list)  # lines that are not events
    notes: list[str] = field(default_factory=list)


def export(
    settings: AuditSettings,
    fmt: str,
    to: str,
    *,
    tls: TlsFiles | None = None,
    spool_root: Path | None = None,
    batch_size: int = 500,
    timeout: float = 10.0,
) -> ExportResult:
    """Deliver the events not yet delivered to ``to`` in format ``fmt``."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}", hint=f"use one of {', '.join(FORMATS)}")
    if batch_size < 1:
        raise UsageError("--batch must be at least 1")
    dest = parse_destination(to)
    if dest.path is not None:  # appended to, never replaced: a regular file, existing folder
        output_target(dest.path, what="--to")
    spool = Spool((spool_root or settings.spool_dir) / destination_id(str(dest), fmt))
    result = ExportResult(str(dest), fmt)
    leftover = spool.pending()
    if leftover is not None:
        deliver(dest, leftover.payload, tls, timeout)
        spool.commit(leftover)
        result.resent = leftover.last - leftover.first + 1
    cursor = spool.cursor()
    batch: list[Entry] = []

    def flush() -> None:
        events = [e.event for e in batch if e.event is not None]
        if not events:
            return
        messages = [render(fmt, e.event, e.line, syslog=dest.syslog) for e in batch if e.event]
        first, last = events[0], events[-1]
        assert first.sequence is not None and last.sequence is not None and last.hash
        staged = Pending(first.sequence, last.sequence, last.hash, frame(messages, dest, fmt))
        spool.stage(staged)
        deliver(dest, staged.payload, tls, timeout)
        spool.commit(staged)
        result.sent += len(events)
        result.first = result.first or first.sequence
        result.last = last.sequence
        batch.clear()

    checked = cursor.sequence == 0
    for entry in read_entries(settings.path, after=cursor.sequence):
        if entry.event is None:
            result.skipped.append(f"{entry.file}:{entry.number}: {entry.error}")
            continue
        if not checked:
            checked = True
            if entry.event.prev_hash != cursor.hash:
                result.notes.append(
                    f"event {entry.event.sequence} does not follow the last event delivered "
                    f"({cursor.sequence}): the log changed since; run `dolmen audit verify`"
                )
        batch.append(entry)
        if len(batch) >= batch_size:
            flush()
    flush()
    return result
