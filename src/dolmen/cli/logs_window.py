"""``logs scan --since``: the window of time an event must fall in to be shown.

An archived log (a dmesg from last month, a bundle's kern.log) has nothing in "the last
two hours" of now; what its reader means by ``--since 2h`` is the last two hours *of the
log*. So the window is counted back from the end of the logs by default: the last
wall-clock time of the newest file given (files in one clock kind share one end, so a
rotated set ``syslog.2.gz syslog.1 syslog`` is one history), ``--anchor now`` counts
back from now instead. Times with an offset and local times without one are two clocks
that cannot be compared: each is counted back from its own newest end.

A log with boot-relative times only (plain ``dmesg``, ``/dev/kmsg``) has an end too, in
seconds since boot: from the end, its events are placed by those seconds, provided they
never went back (a reboot inside the file would make two boots' seconds look alike;
then its events stay undated and are kept). Counted from now, boot seconds cannot be
placed at all: kept, and counted as undated, as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from dolmen.compat import UTC, fromisoformat

END = "end"
NOW = "now"


@dataclass(frozen=True)
class Span:
    """What the window needs of one scanned file: its last wall-clock time, its last
    boot-relative time, and whether its boot seconds ran forward all along (one boot)."""

    last_time: datetime | None
    last_boot: float | None
    boot_ordered: bool
    has_wall: bool


@dataclass(frozen=True)
class Window:
    """``--since LENGTH``, counted back from ``anchor`` (``end`` or ``now``)."""

    since: str
    length: timedelta
    anchor: str
    aware_end: datetime | None  # the newest end with a UTC offset (or now)
    naive_end: datetime | None  # the newest end in local time without an offset (or now)
    boot_ends: tuple[float | None, ...]  # per file: the end in seconds since boot, if usable

    def keeps(self, index: int, time: str | None, boot: float | None) -> bool:
        """Whether an event (its ISO time as the document writes it, or its boot seconds)
        falls in the window; an event the window cannot place is kept."""
        if time is not None:
            try:
                when = fromisoformat(time)
            except ValueError:
                return True
            start = self._start(when.tzinfo is not None)
            return start is None or when >= start
        end = self.boot_ends[index]
        if boot is None or end is None:
            return True
        return boot >= end - self.length.total_seconds()

    def _start(self, aware: bool) -> datetime | None:
        end = self.aware_end if aware else self.naive_end
        if end is None:
            return None
        try:
            return end - self.length
        except OverflowError:  # an end near year 1: the window reaches the log's start
            return None

    def file_doc(self, index: int, span: Span) -> dict[str, Any]:
        """The window as it applied to one file, for the JSON document."""
        aware = span.last_time is not None and span.last_time.tzinfo is not None
        end = self.aware_end if aware else self.naive_end
        start = self._start(aware)
        boot_end = self.boot_ends[index]
        use_wall = span.has_wall or boot_end is None
        return {
            "start": None if start is None or not use_wall else start.isoformat(),
            "end": None if end is None or not use_wall else end.isoformat(),
            "start_boot_seconds": None
            if boot_end is None
            else max(0.0, boot_end - self.length.total_seconds()),
            "end_boot_seconds": boot_end,
        }

    def describe(self, index: int, span: Span) -> str:
        """One line saying what the window was for this file, and from where it counts."""
        d = self.file_doc(index, span)
        origin = "now" if self.anchor == NOW else "the end of the logs, not now"
        if d["end"] is not None:
            start = d["start"] or "the start"
            return f"--since {self.since}: {start} .. {d['end']} (counted back from {origin})"
        if d["end_boot_seconds"] is not None:
            return (
                f"--since {self.since}: [{d['start_boot_seconds']:.3f}] .. "
                f"[{d['end_boot_seconds']:.3f}] seconds since boot (counted back from the "
                "end of this log, not now)"
            )
        if self.anchor == NOW:
            why = "no wall-clock time in this log"
        elif span.last_boot is not None and not span.boot_ordered:
            why = "its seconds since boot go back: a reboot inside the log"
        else:
            why = "no time in this log to count back from"
        return f"--since {self.since}: not applied ({why}); every event is kept"


def make_window(since: str, length: timedelta, anchor: str, spans: list[Span]) -> Window:
    """The window of ``--since`` over the scanned files (see the module docstring)."""
    if anchor == NOW:
        now = datetime.now(UTC)
        return Window(since, length, anchor, now, datetime.now(), tuple(None for _ in spans))
    aware = [s.last_time for s in spans if s.last_time is not None and s.last_time.tzinfo]
    naive = [s.last_time for s in spans if s.last_time is not None and not s.last_time.tzinfo]
    boots = tuple(s.last_boot if not s.has_wall and s.boot_ordered else None for s in spans)
    return Window(since, length, anchor, max(aware, default=None), max(naive, default=None), boots)
