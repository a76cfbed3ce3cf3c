"""Reading the log for people and exporters: events in order, filtered, and followed.

The reader trusts nothing it reads: a line that is not an event is reported as a
``LineError`` in place, so ``show`` and ``export`` can say where; proving the log
is intact is ``verify``'s job.
"""

from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from dolmen.audit.event import AuditEvent, LineError, parse_line
from dolmen.audit.segments import SEQ_DIGITS, segments
from dolmen.compat import UTC, fromisoformat
from dolmen.errors import UsageError
from dolmen.values.duration import NotADuration, parse_duration


@dataclass(frozen=True)
class Entry:
    """One line of the log: its event (or why it is not one), its bytes and where it is."""

    event: AuditEvent | None
    line: bytes
    file: Path
    number: int
    error: LineError | None = None


def read_entries(log: Path, *, after: int = 0) -> Iterator[Entry]:
    """Every line of the log in chain order; with ``after``, skip whole segments that end
    before it and lines whose sequence is not above it."""
    files = segments(log)
    for i, path in enumerate(files):
        nxt = files[i + 1] if i + 1 < len(files) else None
        if after and nxt is not None and nxt != log and _first_seq(nxt) <= after + 1:
            continue
        try:
            with open(path, "rb") as f:
                for number, line in enumerate(f, 1):
                    if not line.endswith(b"\n"):
                        break  # a torn last line: not an event (yet, or ever)
                    entry = _entry(line, path, number)
                    if entry.event is None or (entry.event.sequence or 0) > after:
                        yield entry
        except FileNotFoundError:
            continue  # rotated away while we read; the next segment holds the rest


def _first_seq(path: Path) -> int:
    suffix = path.name.rsplit(".", 1)[-1]
    return int(suffix) if len(suffix) == SEQ_DIGITS and suffix.isdigit() else 1 << 62


def _entry(line: bytes, path: Path, number: int) -> Entry:
    try:
        return Entry(parse_line(line), line, path, number)
    except LineError as e:
        return Entry(None, line, path, number, e)


@dataclass(frozen=True)
class Filter:
    """What ``show`` selects: events at or after ``since`` whose action matches a pattern."""

    since: str | None = None  # an @timestamp, compared as text (same fixed format)
    actions: tuple[str, ...] = ()

    def __call__(self, event: AuditEvent) -> bool:
        if self.since is not None and event.timestamp < self.since:
            return False
        return not self.actions or any(fnmatch.fnmatchcase(event.action, a) for a in self.actions)


def parse_since(text: str, now: datetime | None = None) -> str:
    """``--since``: a duration back from now (``90m``, ``2h``, ``7d``) or an ISO 8601 time
    (naive times are UTC); returns it in the log's @timestamp format."""
    now = now or datetime.now(UTC)
    try:
        when = now - parse_duration(text, what="--since")
    except NotADuration:  # a negative or absurd duration is refused as such, not as a time
        try:
            when = fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise UsageError(
                f"--since {text!r}: not a time",
                hint="use a duration (30m, 2h, 7d) or an ISO time (2026-03-01T12:00:00Z)",
            ) from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def follow(
    log: Path,
    *,
    after: int,
    stop: Callable[[], bool],
    interval: float = 0.2,
) -> Iterator[Entry]:
    """Entries with a sequence above ``after`` as they are appended, across rotations,
    until ``stop()`` is true (checked between polls)."""
    last = after
    seen: tuple[int, int] | None = None
    while not stop():
        try:
            st = os.stat(log)
            now = (st.st_ino, st.st_size)
        except FileNotFoundError:
            now = None
        if now != seen:
            seen = now
            for entry in read_entries(log, after=last):
                if entry.event is not None and entry.event.sequence is not None:
                    last = entry.event.sequence
                yield entry
        time.sleep(interval)
