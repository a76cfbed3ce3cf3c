"""Kernel-log lines in every format dolmen meets, told apart line by line (pure parsing).

Formats (``LogRecord.fmt``), each with the tool that prints it:

    kmsg           ``6,3964,206764307,-;msg``: /dev/kmsg records (priority, sequence,
                   microseconds since boot); continuation lines start with a space
    dmesg          ``[12345.678901] msg``: plain ``dmesg`` (seconds since boot), also
                   behind ``<6>`` priorities in pstore/ERST crash dumps
    dmesg-ctime    ``[Tue Jan 21 02:21:33 2025] msg``: ``dmesg -T`` (local time, zone unknown)
    dmesg-iso      ``2025-01-21T02:21:33,498559+00:00 msg``: ``dmesg --time-format iso``
    *-decode       any of the above behind ``kern  :warn  : `` (``dmesg --decode``)
    journal-iso    ``2025-01-17T17:10:43+0000 host kernel: msg``: ``journalctl -o short-iso``
                   (and short-iso-precise, rsyslog RFC 3339)
    syslog         ``Aug 17 00:00:24 host kernel: msg``: classic syslog, ``journalctl -o
                   short`` / ``short-precise``; the year is not in the line
    fabricmanager  ``[Dec 19 2024 19:17:49] [ERROR] [tid 1374] msg``: nv-fabricmanager's log
    raw            anything else (a ``kernel: msg`` quote, a bare ``NVRM: ...`` line)

Times: ``time`` is a datetime when the line has a wall clock (timezone-aware when
the line says its offset, naive local time otherwise); ``boot_seconds`` when it
has seconds since boot; ``clock`` says which (``absolute``, ``local``, ``boot``,
``yearless``, ``none``). A syslog line has no year: it gets the year of ``now``
(the previous year when that would put it in the future), or none without ``now``.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from functools import lru_cache

from dolmen.compat import UTC
from dolmen.facts.kernel_log.lazy import Lazy
from dolmen.facts.kernel_log.model import LogRecord

LEVELS = ("emerg", "alert", "crit", "err", "warn", "notice", "info", "debug")
FACILITIES = (
    "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news",
    "uucp", "cron", "authpriv", "ftp", "res0", "res1", "res2", "res3",
    "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
)  # fmt: skip
_FACILITY_SET = frozenset(FACILITIES)
_MONTHS = {
    m: i
    for i, m in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1
    )
}
# Syslog's level names as `dmesg --decode` prints them (util-linux).
_LEVEL_SET = frozenset(LEVELS)

_KMSG = Lazy(r"(\d{1,3}),(\d+),(\d+),[^;]*;(.*)")
_PRIO = Lazy(r"<(\d{1,3})>(.*)")
_DECODE = Lazy(r"([a-z0-9]+) *:([a-z]+) *: ?(.*)")
_BOOT = Lazy(r"\[\s*(\d+\.\d+)\]\s?(.*)")
_CTIME = Lazy(
    r"\[(?:[A-Z][a-z]{2} )?([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})\]\s?(.*)"
)
_FM = Lazy(
    r"\[([A-Z][a-z]{2}) +(\d{1,2}) (\d{4}) (\d\d):(\d\d):(\d\d)\] "
    r"\[([A-Z]+)\] (?:\[tid \d+\] )?(.*)"
)
_ISO = Lazy(
    r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:([,.])(\d{1,9}))?(Z|[+-]\d\d:?\d\d)?\s+(.*)"
)
_SYSLOG = Lazy(r"([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))? (.*)")
# "host program[pid]: message" after a syslog/journal time stamp.
_TAIL = Lazy(r"(\S+) ([^\s:\[]+)(?:\[(\d+)\])?: ?(.*)")
_KERNEL_QUOTE = Lazy(r"kernel: (.*)")


def parse_record(lines: list[str], line_no: int = 1, *, now: datetime | None = None) -> LogRecord:
    """One record from its first line and its continuation lines (which start with a space).

    Never raises: a line no format matches is a ``raw`` record whose message is the line.
    """
    head = lines[0]
    rec = _parse_head(head, line_no, now)
    if len(lines) > 1:
        extra = [ln.strip() for ln in lines[1:]]
        if rec.fmt == "kmsg":
            # /dev/kmsg continuation lines are the record's KEY=value dictionary, not text.
            extra = [e for e in extra if not _is_dict_entry(e)]
        message = " ".join([rec.message, *extra]) if extra else rec.message
        rec = _replace(rec, message=message, raw="\n".join(lines))
    return rec


def iter_records(text: str, *, now: datetime | None = None) -> list[LogRecord]:
    """Every record of a log, continuation lines joined; empty lines are skipped."""
    out: list[LogRecord] = []
    group: list[str] = []
    start = 0
    for i, line in enumerate(text.splitlines(), 1):
        if group and line[:1] in (" ", "\t") and line.strip():
            group.append(line)
            continue
        if group:
            out.append(parse_record(group, start, now=now))
            group = []
        if line.strip():
            group, start = [line], i
    if group:
        out.append(parse_record(group, start, now=now))
    return out


def _parse_head(line: str, line_no: int, now: datetime | None) -> LogRecord:
    c = line[:1]
    if c.isdigit():
        m = _KMSG.match(line)
        if m:
            prio = int(m[1])
            return LogRecord(
                line_no,
                "kmsg",
                m[4],
                line,
                None,
                int(m[3]) / 1e6,
                "boot",
                _facility(prio >> 3),
                LEVELS[prio & 7],
            )
        return _stamped(line, line, line_no, now, None, None, "")
    if c == "<":
        m = _PRIO.match(line)
        if m:
            prio = int(m[1])
            return _stamped(m[2], line, line_no, now, _facility(prio >> 3), LEVELS[prio & 7], "")
    elif c.islower():
        m = _DECODE.match(line)
        if m and m[1] in _FACILITY_SET and m[2] in _LEVEL_SET:
            return _stamped(m[3], line, line_no, now, m[1], m[2], "-decode")
        m = _KERNEL_QUOTE.match(line)
        if m:
            return _kernel_message(LogRecord(line_no, "raw", m[1], line, program="kernel"))
    elif c == "[" or c.isupper():
        return _stamped(line, line, line_no, now, None, None, "")
    return LogRecord(line_no, "raw", line, line)


def _stamped(
    rest: str,
    raw: str,
    line_no: int,
    now: datetime | None,
    facility: str | None,
    level: str | None,
    suffix: str,
) -> LogRecord:
    """A line (or the rest of it after a priority) that may start with a time stamp."""
    c = rest[:1]
    if c == "[":
        m = _BOOT.match(rest)
        if m:
            return LogRecord(
                line_no, "dmesg" + suffix, m[2], raw, None, float(m[1]), "boot", facility, level
            )
        m = _CTIME.match(rest)
        if m:
            t = _wall(int(m[6]), m[1], m[2], m[3], m[4], m[5])
            if t is not None:
                return LogRecord(
                    line_no, "dmesg-ctime" + suffix, m[7], raw, t, None, "local", facility, level
                )
        m = _FM.match(rest)
        if m:
            t = _wall(int(m[3]), m[1], m[2], m[4], m[5], m[6])
            if t is not None:
                lvl = m[7].lower()
                return LogRecord(
                    line_no,
                    "fabricmanager",
                    m[8],
                    raw,
                    t,
                    None,
                    "local",
                    None,
                    lvl,
                    "nv-fabricmanager",
                )
    elif c.isdigit():
        m = _ISO.match(rest)
        if m:
            t = _iso(m)
            if t is not None:
                clock = "absolute" if t.tzinfo else "local"
                if m[7] == ",":  # util-linux dmesg: comma before the microseconds, no host
                    return LogRecord(
                        line_no, "dmesg-iso" + suffix, m[10], raw, t, None, clock, facility, level
                    )
                return _tail(LogRecord(line_no, "journal-iso", m[10], raw, t, None, clock))
    elif c.isupper() and not suffix:
        m = _SYSLOG.match(rest)
        if m and m[1] in _MONTHS:
            t = _yearless(m[1], m[2], m[3], m[4], m[5], m[6], now)
            clock = "yearless" if t is None else "local"
            return _tail(LogRecord(line_no, "syslog", m[7], raw, t, None, clock))
    return LogRecord(
        line_no,
        "raw" if not suffix else "raw" + suffix,
        rest,
        raw,
        None,
        None,
        "none",
        facility,
        level,
    )


def _tail(rec: LogRecord) -> LogRecord:
    """Split "host program[pid]: message" after a syslog or journal time stamp."""
    m = _TAIL.match(rec.message)
    if not m:
        return rec
    rec = _replace(rec, message=m[4], program=m[2])
    return _kernel_message(rec) if m[2] == "kernel" else rec


def _kernel_message(rec: LogRecord) -> LogRecord:
    # rsyslog's kernel lines often keep dmesg's "[  966.503025] " in the message.
    if rec.message.startswith("["):
        m = _BOOT.match(rec.message)
        if m:
            return _replace(
                rec, message=m[2], boot_seconds=float(m[1]), clock=rec.clock if rec.time else "boot"
            )
    return rec


def _replace(rec: LogRecord, **changes: object) -> LogRecord:
    return LogRecord(**{**vars(rec), **changes})  # a record's __dict__ holds its fields


def _facility(code: int) -> str:
    return FACILITIES[code] if code < len(FACILITIES) else str(code)


def _is_dict_entry(text: str) -> bool:
    key, eq, _ = text.partition("=")
    return bool(eq) and key.isupper()


def _wall(year: int, month: str, day: str, hh: str, mm: str, ss: str) -> datetime | None:
    mon = _MONTHS.get(month)
    if mon is None:
        return None
    try:
        return datetime(year, mon, int(day), int(hh), int(mm), int(ss))
    except ValueError:
        return None


def _iso(m: re.Match[str]) -> datetime | None:
    micro = int((m[8] or "0")[:6].ljust(6, "0"))
    try:
        return datetime(
            int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]), micro, _tz(m[9])
        )
    except ValueError:
        return None


@lru_cache(maxsize=64)
def _tz(text: str | None) -> timezone | None:
    """The zone of an ISO offset ("+00:00", "+0800", "Z"), None when the line has none."""
    if not text:
        return None
    if text == "Z":
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    return timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))


def _yearless(
    month: str, day: str, hh: str, mm: str, ss: str, frac: str | None, now: datetime | None
) -> datetime | None:
    if now is None:
        return None
    micro = int((frac or "0")[:6].ljust(6, "0"))
    ref = now.replace(tzinfo=None)
    for year in (ref.year, ref.year - 1):
        t = _wall(year, month, day, hh, mm, ss)
        # A line dated more than a day ahead of `now` belongs to last year (logs span New Year).
        if t is not None and t <= ref + timedelta(days=1):
            return t.replace(microsecond=micro)
    return None
