"""``scan_kernel_log(text)``: the facts of a kernel log's text, pure and linear."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime

from dolmen.facts.kernel_log.events import NEEDLES, extract_event
from dolmen.facts.kernel_log.lines import parse_record
from dolmen.facts.kernel_log.model import KernelEvent, KernelLogFacts, LogRecord

_SAMPLE = 64  # head lines sampled to name the dominant format


def scan_kernel_log(
    text: str, *, source: str | None = None, now: datetime | None = None
) -> KernelLogFacts:
    """The facts of a kernel log's text (pure; any format; never raises on bad lines).

    Linear: each line costs a first-character test and one prefilter search; only the
    records whose lines contain an event word (``NEEDLES``) are parsed in full. ``now``
    dates yearless syslog lines (``dolmen.facts.kernel_log.lines``).
    """
    lines = text.splitlines()
    events: list[KernelEvent] = []
    start = -1  # index of the current record's first line
    hit = False
    for i, line in enumerate(lines):
        if start >= 0 and line[:1] in (" ", "\t") and line.strip():
            hit = hit or NEEDLES.search(line) is not None
            continue
        if hit:
            _emit(events, lines, start, i, now)
        if line.strip():
            start, hit = i, NEEDLES.search(line) is not None
        else:
            start, hit = -1, False
    if hit:
        _emit(events, lines, start, len(lines), now)
    heads = _heads(lines, now)
    first, last = (heads[0], heads[-1]) if heads else (None, None)
    fmt = Counter(r.fmt for r in heads).most_common(1)[0][0] if heads else None
    return KernelLogFacts(
        source=source,
        format=fmt,
        lines=len(lines),
        events=tuple(events),
        first_time=_first_time(heads),
        last_time=_first_time(reversed(heads)),
        first_boot_seconds=first.boot_seconds if first else None,
        last_boot_seconds=last.boot_seconds if last else None,
    )


def _emit(
    events: list[KernelEvent], lines: list[str], start: int, end: int, now: datetime | None
) -> None:
    group = [ln for ln in lines[start:end] if ln.strip()]
    ev = extract_event(parse_record(group, start + 1, now=now))
    if ev is not None:
        events.append(ev)


def _heads(lines: list[str], now: datetime | None) -> list[LogRecord]:
    """Parsed records of the first and last ``_SAMPLE`` record heads (span and format)."""
    idx = [i for i in range(min(len(lines), _SAMPLE * 4)) if _is_head(lines[i])][:_SAMPLE]
    tail: list[int] = []
    for i in range(len(lines) - 1, max(-1, len(lines) - 1 - _SAMPLE * 4), -1):
        if len(tail) == _SAMPLE or (idx and i <= idx[-1]):
            break
        if _is_head(lines[i]):
            tail.append(i)
    return [parse_record([lines[i]], i + 1, now=now) for i in [*idx, *reversed(tail)]]


def _is_head(line: str) -> bool:
    return bool(line.strip()) and line[:1] not in (" ", "\t")


def _first_time(records: Iterable[LogRecord]) -> datetime | None:
    return next((r.time for r in records if r.time is not None), None)
