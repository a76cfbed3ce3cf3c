"""``dolmen logs scan``: explain the Xid, SXid and link events of kernel logs.

Each FILE (``-`` for stdin; a ``.gz`` from logrotate is read as is) may be in any
format ``dolmen.facts.kernel_log`` reads: dmesg (plain, -T, --time-format iso,
--decode), /dev/kmsg, journalctl -k, syslog, pstore dumps, nv-fabricmanager logs.
Events are grouped by device (GPU bus id, NVSwitch, interface) with the meaning,
severity and action of ``kb/data/xids.toml``, then a summary line.

Exit codes: 0 no critical event, 1 critical events found, 2 unreadable input.

``--json`` prints one document, schema ``dolmen.logscan/1``::

    {"schema": "dolmen.logscan/1",
     "since": "2h" | null,                 # the --since option as given
     "files": [{"path", "format", "lines", "first_time", "last_time",
                "first_boot_seconds", "last_boot_seconds", "events", "filtered"}],
     "events": [{"file", "line", "kind", "code", "label", "group", "bus_id", "device",
                 "interface", "time", "clock", "boot_seconds", "pid", "process",
                 "fatal", "detail", "severity", "action", "meaning", "known", "message"}],
     "summary": {"events", "critical", "warn", "info", "undated",
                 "by_code": {"Xid 13": n, ...}, "by_group": {"GPU 0000:38:00.0": n, ...}},
     "exit_code": 0 | 1}

``time`` is ISO 8601 (with its offset when the log gave one; ``clock`` says
``absolute``, ``local``, ``boot`` or ``none``); ``kind`` is xid, sxid,
fell_off_bus, ib_flap, pcie_limited, aer, aer_corrected, peermem or api_mismatch; ``code`` the
Xid or SXid number. ``--since`` keeps the events of the last DURATION; events
with only boot-relative times cannot be dated, are kept, and are counted as
``undated``.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import click

from dolmen.cli.main import exit_with
from dolmen.errors import ExitCode, InputError
from dolmen.values.duration import parse_duration

if TYPE_CHECKING:
    from dolmen.facts.kernel_log import KernelEvent, KernelLogFacts
    from dolmen.kb.xids import Assessment, XidCatalogue

SCHEMA = "dolmen.logscan/1"
MAX_BYTES = 1 << 30  # a kernel log larger than 1 GiB (even gzipped) is not one
_STYLE = {"critical": "bold red", "warn": "yellow", "info": "dim"}


@click.group()
def logs() -> None:
    """Explain XID/SXID/IB events in kernel logs."""


@logs.command()
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--json", "as_json", is_flag=True, help=f"Print the {SCHEMA} JSON document.")
@click.option("--since", metavar="DURATION", help="Only events of the last DURATION (30m, 2h, 7d).")
def scan(files: tuple[str, ...], as_json: bool, since: str | None) -> None:
    """Explain the events of kernel logs (dmesg, journalctl -k, syslog, kmsg; - for stdin).

    Exit codes: 0 no critical event, 1 critical events found, 2 unreadable input.
    """
    from dolmen.facts.kernel_log import scan_kernel_log
    from dolmen.kb.xids import load_xids

    window = parse_duration(since, what="--since") if since else None
    texts = [(name, read_log(name)) for name in files]  # every file readable, or exit 2
    catalogue = load_xids()
    now = datetime.now()
    scanned: list[tuple[str, KernelLogFacts, list[Row]]] = []
    for name, text in texts:
        facts = scan_kernel_log(text, source=name, now=now)
        rows = [Row(ev, assess(catalogue, ev)) for ev in facts.events or ()]
        if window is not None:
            rows = [r for r in rows if _recent(r.event, window, now)]
        scanned.append((name, facts, rows))
    rows_all = [r for _, _, rows in scanned for r in rows]
    critical = any(r.verdict.severity == "critical" for r in rows_all)
    code = int(ExitCode.UNHEALTHY if critical else ExitCode.OK)
    if as_json:
        sys.stdout.write(json.dumps(_document(scanned, since, code), indent=2) + "\n")
    else:
        _render(scanned)
    exit_with(code)


@dataclass(frozen=True)
class Row:
    """One event and what the catalogue says about it."""

    event: KernelEvent
    verdict: Assessment

    @property
    def label(self) -> str:
        """``Xid 13``, ``SXid 22013``, or the event kind."""
        ev = self.event
        if ev.kind == "xid":
            return f"Xid {ev.xid}"
        if ev.kind == "sxid":
            return f"SXid {ev.xid}"
        return ev.kind

    @property
    def group(self) -> str:
        """The device the event belongs to: ``GPU 0000:38:00.0``, ``NVSwitch ...``, ``link ib6``."""
        ev = self.event
        where = ev.bus_id or "unknown bus id"
        if ev.kind in ("xid", "fell_off_bus"):
            return f"GPU {where}"
        if ev.kind == "sxid":
            return f"NVSwitch {where}"
        if ev.kind == "ib_flap":
            return f"link {ev.interface}" + (f" ({ev.bus_id})" if ev.bus_id else "")
        if ev.kind in ("pcie_limited", "aer", "aer_corrected"):
            return f"PCI {where}"
        return ev.device or ev.kind


def assess(catalogue: XidCatalogue, ev: KernelEvent) -> Assessment:
    """The catalogue's verdict on one event (``XidCatalogue.assess``)."""
    return catalogue.assess(ev.kind, ev.xid, fatal=ev.fatal, recovery=ev.recovery)


def read_log(name: str) -> str:
    """The text of a log file (``-``: stdin; gzip is unpacked); InputError when unreadable."""
    if name == "-":
        data = sys.stdin.buffer.read(MAX_BYTES + 1)
        where = "<stdin>"
    else:
        where = name
        try:
            with open(name, "rb") as f:
                data = f.read(MAX_BYTES + 1)
        except FileNotFoundError:
            raise InputError("no such file", path=name) from None
        except IsADirectoryError:
            raise InputError("is a directory, not a log file", path=name) from None
        except OSError as e:
            raise InputError(f"cannot read it ({e.strerror or e})", path=name) from None
    if data[:2] == b"\x1f\x8b":
        data = _gunzip(data, where)
    if len(data) > MAX_BYTES:
        raise InputError("larger than 1 GiB: not a kernel log", path=where)
    return _text(data, where)


def _gunzip(data: bytes, where: str) -> bytes:
    import gzip
    import io
    import zlib

    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as z:
            return z.read(MAX_BYTES + 1)
    except (OSError, EOFError, zlib.error) as e:
        raise InputError(f"damaged gzip data ({e})", path=where) from None


def _text(data: bytes, where: str) -> str:
    head = data[: 1 << 16]
    text = data.decode("utf-8", errors="replace")
    sample = text[: 1 << 16]
    junk = sum(1 for c in sample if c == "\ufffd" or (c < " " and c not in "\t\n\r\f"))
    if b"\x00" in head or (sample and junk > len(sample) // 20):
        raise InputError(
            "binary data, not a text log",
            path=where,
            hint="for a systemd journal file: journalctl --file FILE -k -o short-iso | "
            "dolmen logs scan -",
        )
    return text


def _recent(ev: KernelEvent, window: timedelta, now: datetime) -> bool:
    if ev.time is None:
        return True  # boot-relative only: cannot be dated, kept (and counted as undated)
    if ev.time.tzinfo is not None:
        return ev.time >= datetime.now(UTC) - window
    return ev.time >= now - window


def _time(ev: KernelEvent) -> str:
    if ev.time is not None:
        return ev.time.isoformat()
    if ev.boot_seconds is not None:
        return f"[{ev.boot_seconds:.6f}]"
    return "-"


def _document(
    scanned: list[tuple[str, KernelLogFacts, list[Row]]], since: str | None, code: int
) -> dict[str, Any]:
    files = []
    events = []
    for name, facts, rows in scanned:
        files.append(
            {
                "path": name,
                "format": facts.format,
                "lines": facts.lines,
                "first_time": _iso(facts.first_time),
                "last_time": _iso(facts.last_time),
                "first_boot_seconds": facts.first_boot_seconds,
                "last_boot_seconds": facts.last_boot_seconds,
                "events": len(rows),
                "filtered": len(facts.events or ()) - len(rows),
            }
        )
        for r in rows:
            ev, v = r.event, r.verdict
            events.append(
                {
                    "file": name,
                    "line": ev.line_no,
                    "kind": ev.kind,
                    "code": ev.xid,
                    "label": r.label,
                    "group": r.group,
                    "bus_id": ev.bus_id,
                    "device": ev.device,
                    "interface": ev.interface,
                    "time": _iso(ev.time),
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
            )
    rows_all = [r for _, _, rows in scanned for r in rows]
    return {
        "schema": SCHEMA,
        "since": since,
        "files": files,
        "events": events,
        "summary": _summary(rows_all),
        "exit_code": code,
    }


def _summary(rows: list[Row]) -> dict[str, Any]:
    sev = Counter(r.verdict.severity for r in rows)
    return {
        "events": len(rows),
        "critical": sev["critical"],
        "warn": sev["warn"],
        "info": sev["info"],
        "undated": sum(1 for r in rows if r.event.time is None),
        "by_code": dict(Counter(r.label for r in rows).most_common()),
        "by_group": dict(Counter(r.group for r in rows).most_common()),
    }


def _iso(t: datetime | None) -> str | None:
    return None if t is None else t.isoformat()


def _render(scanned: list[tuple[str, KernelLogFacts, list[Row]]]) -> None:
    """Plain lines on a pipe; rich colours only when stdout is a terminal."""
    out = _Printer()
    for name, facts, rows in scanned:
        span = ""
        if facts.first_time or facts.last_time:
            span = f", {_iso(facts.first_time)} .. {_iso(facts.last_time)}"
        elif facts.first_boot_seconds is not None:
            span = f", [{facts.first_boot_seconds:.3f}] .. [{facts.last_boot_seconds or 0:.3f}]"
        out.line(f"{name}: {facts.format or 'empty'}, {facts.lines} lines{span}", "bold")
        if not rows:
            out.line("  no events")
        by_group: dict[str, list[Row]] = {}
        for r in rows:
            by_group.setdefault(r.group, []).append(r)
        for group, members in by_group.items():
            out.line(f"  {group}", "bold")
            by_label: dict[str, list[Row]] = {}
            for r in members:
                by_label.setdefault(r.label, []).append(r)
            for label, same in by_label.items():
                v = same[0].verdict
                worst = max(same, key=lambda r: _RANK[r.verdict.severity]).verdict
                out.line(
                    f"    {label}  {worst.severity}  action: {worst.action}  x{len(same)}  "
                    f"{v.meaning}",
                    _STYLE[worst.severity],
                )
                for r in same:
                    out.line(f"      {_time(r.event)}  line {r.event.line_no}: {r.event.message}")
    rows_all = [r for _, _, rows in scanned for r in rows]
    s = _summary(rows_all)
    codes = ", ".join(f"{k} x{n}" for k, n in s["by_code"].items()) or "none"
    groups = ", ".join(f"{k} x{n}" for k, n in s["by_group"].items()) or "none"
    out.line(
        f"summary: {s['events']} events ({s['critical']} critical, {s['warn']} warn, "
        f"{s['info']} info); by code: {codes}; by device: {groups}",
        "bold red" if s["critical"] else "bold",
    )


_RANK = {"info": 0, "warn": 1, "critical": 2}


class _Printer:
    """Writes lines to stdout, through rich only when stdout is a terminal."""

    def __init__(self) -> None:
        self._console: Any = None
        if sys.stdout.isatty():
            from rich.console import Console

            self._console = Console(highlight=False)

    def line(self, text: str, style: str | None = None) -> None:
        if self._console is None:
            sys.stdout.write(text + "\n")
        else:
            from rich.text import Text

            self._console.print(Text(text, style=style or ""), soft_wrap=True)
