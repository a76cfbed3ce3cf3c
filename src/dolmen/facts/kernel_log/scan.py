"""``scan_kernel_log(text)``: the facts of a kernel log's text, pure and linear.

``LogScanner`` is the same scan fed one line at a time, for logs too large to hold
(``dolmen logs scan`` on a rotated syslog of hundreds of MB): it keeps the current
record, the first record heads and a window of the last lines, never the whole log,
and hands each event to ``on_event`` as soon as its record ends; ``feed_block`` takes
whole lines at once and skips a block without any event word at C speed. ``scan_blocks``
feeds it blocks (``stream``) and keeps the events in a ``BoundedEvents``: a flood of one
event (an Xid 13 storm, a link flapping for days) keeps its last ``PER_GROUP`` lines
per device and counts the rest, so validate's memory stays bounded too.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime

from dolmen.facts.kernel_log.events import BLOCK_WORDS, NEEDLES, driver_gpu, extract_event
from dolmen.facts.kernel_log.lines import parse_record
from dolmen.facts.kernel_log.model import KernelEvent, KernelLogFacts, LogRecord
from dolmen.facts.kernel_log.stream import blocks_of

_SAMPLE = 64  # head lines sampled to name the dominant format
# Lines kept of one record (a head and its indented continuation lines). A real record
# has a few; a log of nothing but indented lines must not become one record in memory.
_RECORD_LINES = 1024


def scan_kernel_log(
    text: str, *, source: str | None = None, now: datetime | None = None
) -> KernelLogFacts:
    """The facts of a kernel log's text (pure; any format; never raises on bad lines).

    Linear: each line costs a first-character test and one prefilter search; only the
    records whose lines contain an event word (``NEEDLES``) are parsed in full. ``now``
    dates yearless syslog lines (``dolmen.facts.kernel_log.lines``).
    """
    return scan_blocks(blocks_of(text), source=source, now=now)


def scan_blocks(
    blocks: Iterable[str], *, source: str | None = None, now: datetime | None = None
) -> KernelLogFacts:
    """``scan_kernel_log`` over blocks of whole lines (``stream``: a streamed file, a text
    cut in blocks), events bounded (``BoundedEvents``)."""
    kept = BoundedEvents()
    scanner = LogScanner(now=now, on_event=kept.add)
    for block in blocks:
        scanner.feed_block(block)
    facts = scanner.facts(source=source, events=())  # ends the last record: `kept` is complete
    return replace(facts, events=kept.events(), events_dropped=kept.dropped)


MAX_DRIVER_GPUS = 1024  # bus ids the driver names: far above the GPUs of any host
PER_GROUP = 2048  # events kept per (kind, device, code): far above any check's threshold
MAX_GROUPS = 4096  # distinct devices and codes; more is a hostile or corrupt log


class BoundedEvents:
    """The events of a scan, at most ``PER_GROUP`` (the latest) per kind, device and code."""

    def __init__(self) -> None:
        self._groups: dict[tuple[object, ...], deque[KernelEvent]] = {}
        self.dropped = 0

    def add(self, ev: KernelEvent) -> None:
        key = (ev.kind, ev.bus_id, ev.interface, ev.device, ev.xid)
        group = self._groups.get(key)
        if group is None:
            if len(self._groups) >= MAX_GROUPS:
                self.dropped += 1
                return
            group = self._groups[key] = deque(maxlen=PER_GROUP)
        if len(group) == PER_GROUP:
            self.dropped += 1  # the oldest line of this group gives way
        group.append(ev)

    def events(self) -> tuple[KernelEvent, ...]:
        """The kept events in log order."""
        return tuple(sorted((e for g in self._groups.values() for e in g), key=_line_no))


def _line_no(ev: KernelEvent) -> int:
    return ev.line_no


class LogScanner:
    """``scan_kernel_log`` one line at a time (see module docstring)."""

    def __init__(
        self, *, now: datetime | None = None, on_event: Callable[[KernelEvent], None]
    ) -> None:
        self._now = now
        self._on_event = on_event
        self.lines = 0
        self._record: list[str] = []  # the current record's lines; [] between records
        self._start = -1  # index of the current record's first line
        self._hit = False
        self._first: list[int] = []  # indexes of the first _SAMPLE heads
        self._first_lines: list[str] = []
        self._last: deque[tuple[int, str]] = deque(maxlen=_SAMPLE * 4)
        self._driver_gpus: dict[str, None] = {}  # ordered, bounded (MAX_DRIVER_GPUS)

    def feed_all(self, lines: Iterable[str]) -> None:
        """Feed every line of ``lines`` (each without its line ending)."""
        for line in lines:
            self.feed(line)

    def feed_block(self, block: str) -> None:
        """Whole lines at once (a ``stream`` block: it ends at a line break). A block that
        holds none of ``BLOCK_WORDS`` cannot hold an event: its lines are counted and
        sampled, and only its last record is kept (its continuation may come next)."""
        if any(word in block for word in BLOCK_WORDS):
            self.feed_all(block.splitlines())
            return
        lines = block.splitlines()
        n, i0 = len(lines), self.lines
        if not n:
            return
        if i0 < _SAMPLE * 4:
            for line in lines[: _SAMPLE * 4 - i0]:
                self.feed_sample(line)
        self._last.extend(zip(range(i0 + max(0, n - _SAMPLE * 4), i0 + n), lines[-_SAMPLE * 4 :]))
        self.lines = i0 + n
        k = 0  # the lines that continue the record open before this block
        if self._start >= 0:
            while k < n and lines[k][:1] in (" ", "\t") and lines[k].strip():
                if len(self._record) < _RECORD_LINES:
                    self._record.append(lines[k])
                k += 1
            if k == n:
                return
            self._end_record()
        if not lines[-1].strip():
            return  # the block ends between records
        j = n - 1  # the block's last record starts at its last line that continues nothing
        while j > k and lines[j][:1] in (" ", "\t") and lines[j - 1].strip():
            j -= 1
        tail = lines[j : j + _RECORD_LINES]
        self._start, self._hit, self._record = i0 + j, False, tail

    def feed_sample(self, line: str) -> None:
        """Count one line toward the sample of first heads (``feed_block``'s fast path)."""
        i = self.lines
        self.lines += 1
        if len(self._first) < _SAMPLE and _is_head(line):
            self._first.append(i)
            self._first_lines.append(line)

    def feed(self, line: str) -> None:
        """One more line of the log, without its line ending."""
        i = self.lines
        self.lines += 1
        if i < _SAMPLE * 4 and len(self._first) < _SAMPLE and _is_head(line):
            self._first.append(i)
            self._first_lines.append(line)
        self._last.append((i, line))
        if self._start >= 0 and line[:1] in (" ", "\t") and line.strip():
            self._hit = self._hit or NEEDLES.search(line) is not None
            if len(self._record) < _RECORD_LINES:
                self._record.append(line)
            return
        self._end_record()
        if line.strip():
            self._start, self._hit, self._record = i, NEEDLES.search(line) is not None, [line]

    def facts(
        self, *, source: str | None = None, events: Sequence[KernelEvent] | None = None
    ) -> KernelLogFacts:
        """The facts of the lines fed so far, ``events`` as collected (this call ends the
        last record first, so an ``on_event`` list is complete when it is read here)."""
        self._end_record()
        heads = self._heads()
        first, last = (heads[0], heads[-1]) if heads else (None, None)
        fmt = Counter(r.fmt for r in heads).most_common(1)[0][0] if heads else None
        return KernelLogFacts(
            source=source,
            format=fmt,
            lines=self.lines,
            events=None if events is None else tuple(events),
            first_time=_first_time(heads),
            last_time=_first_time(reversed(heads)),
            first_boot_seconds=first.boot_seconds if first else None,
            last_boot_seconds=last.boot_seconds if last else None,
            driver_gpus=tuple(self._driver_gpus),
        )

    def _end_record(self) -> None:
        if self._hit:
            group = [ln for ln in self._record if ln.strip()]
            rec = parse_record(group, self._start + 1, now=self._now)
            ev = extract_event(rec)
            if ev is not None:
                self._on_event(ev)
            elif len(self._driver_gpus) < MAX_DRIVER_GPUS and (bus := driver_gpu(rec.message)):
                self._driver_gpus[bus] = None
        self._start, self._hit, self._record = -1, False, []

    def _heads(self) -> list[LogRecord]:
        """Parsed records of the first and last ``_SAMPLE`` record heads (span and format)."""
        tail: list[tuple[int, str]] = []
        for i, line in reversed(self._last):
            if len(tail) == _SAMPLE or (self._first and i <= self._first[-1]):
                break
            if _is_head(line):
                tail.append((i, line))
        picked = [*zip(self._first, self._first_lines, strict=True), *reversed(tail)]
        return [parse_record([line], i + 1, now=self._now) for i, line in picked]


def _is_head(line: str) -> bool:
    return bool(line.strip()) and line[:1] not in (" ", "\t")


def _first_time(records: Iterable[LogRecord]) -> datetime | None:
    return next((r.time for r in records if r.time is not None), None)
