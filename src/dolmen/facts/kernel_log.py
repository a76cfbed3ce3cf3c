"""kernel_log facts: the events of the kernel log (Xids, SXids, link flaps, PCIe errors).

Read: ``dmesg --time-format iso --decode``, else plain ``dmesg``, else
``journalctl -k -o short-iso --no-pager -b``, always under the tree key
``commands/dmesg`` (``host.run(argv, key="dmesg")``): a host tree holds the
kernel log there whatever command ran live. Parse: ``scan_kernel_log(text)``,
pure and linear; any format of ``kernel_log_lines`` is accepted, line by line.

``dmesg`` refused to a non-root user (``kernel.dmesg_restrict``) is
``unread["events"] = "insufficient permissions: ..."``, never an empty log.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from dolmen.facts.kernel_log_events import NEEDLES, KernelEvent, extract_event, normalize_bus_id
from dolmen.facts.kernel_log_lines import LogRecord, parse_record
from dolmen.host import CommandResult, Host, RunStatus

__all__ = [
    "ATTEMPTS",
    "KernelEvent",
    "KernelLogFacts",
    "LogRecord",
    "collect",
    "normalize_bus_id",
    "scan_kernel_log",
]

TREE_KEY = "dmesg"  # commands/dmesg in a host tree: a contract with `dolmen snapshot`
ATTEMPTS: tuple[tuple[str, ...], ...] = (
    ("dmesg", "--time-format", "iso", "--decode"),
    ("dmesg",),  # busybox and util-linux < 2.27 know neither option
    ("journalctl", "-k", "-o", "short-iso", "--no-pager", "-b"),
)
_SAMPLE = 64  # head lines sampled to name the dominant format
_DENIED = ("Operation not permitted", "Permission denied", "not seeing messages")


@dataclass(frozen=True)
class KernelLogFacts:
    """The kernel log of a host: where it came from, its span, and its events.

    ``events`` is None when the log could not be read (``unread["events"]`` says why).
    ``first_time``/``last_time`` are the wall-clock span when the lines carry one;
    ``first_boot_seconds``/``last_boot_seconds`` the span in seconds since boot.
    """

    source: str | None = None  # the command whose output this is
    format: str | None = None  # the dominant line format (kernel_log_lines)
    lines: int = 0
    events: tuple[KernelEvent, ...] | None = None
    first_time: datetime | None = None
    last_time: datetime | None = None
    first_boot_seconds: float | None = None
    last_boot_seconds: float | None = None
    unread: Mapping[str, str] = field(default_factory=dict)


def scan_kernel_log(
    text: str, *, source: str | None = None, now: datetime | None = None
) -> KernelLogFacts:
    """The facts of a kernel log's text (pure; any format; never raises on bad lines).

    Linear: each line costs a first-character test and one prefilter search; only the
    records whose lines contain an event word (``NEEDLES``) are parsed in full. ``now``
    dates yearless syslog lines (``kernel_log_lines``).
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


def collect(host: Host, *, now: datetime | None = None) -> KernelLogFacts:
    """Read the kernel log of ``host`` and scan it (see module docstring)."""
    failures: list[CommandResult] = []
    for argv in ATTEMPTS:
        result = host.run(argv, key=TREE_KEY, timeout=30)
        if result.ok:
            # A tree does not say which command filled commands/dmesg: name the file.
            source = " ".join(argv) if host.kind == "live" else f"commands/{TREE_KEY}"
            facts = scan_kernel_log(result.stdout, source=source, now=now or datetime.now())
            # journalctl exits 0 and prints "-- No entries --" to a user outside the adm and
            # systemd-journal groups: that is a refusal, not an empty log.
            if not (_denied(result.stderr) and facts.format in (None, "raw")):
                return facts
        failures.append(result)
        if result.status is RunStatus.MISSING and host.kind != "live":
            break  # a tree has one kernel log (commands/dmesg): no other command to try
    return KernelLogFacts(unread={"events": _reason(failures)})


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


def _denied(stderr: str) -> bool:
    return any(word in stderr for word in _DENIED)


def _reason(failures: list[CommandResult]) -> str:
    for r in failures:
        if r.status is RunStatus.DENIED or _denied(r.stderr):
            denied = r.failure("insufficient permissions")
            return f"{denied} (kernel.dmesg_restrict: run as root)"
    for status in (RunStatus.TIMEOUT, RunStatus.FAILED):
        for r in failures:
            if r.status is status:
                return r.failure()
    last = failures[-1] if failures else None
    return f"missing: {last.describe() if last else 'no command to read the kernel log'}"
