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
``absolute``, ``local``, ``boot`` or ``none``); ``kind`` is an event kind of
``dolmen.facts.kernel_log`` (xid, sxid, fell_off_bus, ib_flap, pcie_limited, aer,
aer_corrected, peermem, api_mismatch, io_error, panic, oops, oom_kill, segfault,
file_max); ``code`` the Xid or SXid number. ``severity`` is validate's for the same
event (``dolmen.checks.log_severity``: one table, kb/data/xids.toml); a link that came
up (``ib_flap`` with ``detail`` "up") is labelled ``link_up`` and is no flap.
``--since`` keeps the events of the last DURATION; events with only boot-relative
times cannot be dated, are kept, and are counted as ``undated``.
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import click

from dolmen.checks.log_severity import assess_event, catalogue_kind
from dolmen.cli.logs_input import LogInput, open_log
from dolmen.cli.logs_json import SCHEMA, Spool, Tally, iso, write_document
from dolmen.cli.main import exit_with
from dolmen.errors import ExitCode
from dolmen.values.duration import parse_duration
from dolmen.values.text import printable

if TYPE_CHECKING:
    from dolmen.facts.kernel_log import KernelEvent, KernelLogFacts
    from dolmen.kb.xids import Assessment, XidCatalogue

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
    from dolmen.kb.xids import load_xids

    window = parse_duration(since, what="--since") if since else None
    opened: list[LogInput] = []
    try:
        for name in files:  # every file opens and starts as text, or exit 2 before any output
            opened.append(open_log(name))
        catalogue = load_xids()
        now = datetime.now()
        tally = Tally()
        with tempfile.TemporaryFile("w+", encoding="utf-8") as spool:
            # JSON events go to a spool as they are found, so memory stays bounded whatever
            # the log's size; the terminal report groups events, so it keeps its rows.
            sink = Spool(spool) if as_json else None
            scanned = [_scan_one(log, catalogue, window, now, tally, sink) for log in opened]
            code = int(ExitCode.UNHEALTHY if tally.critical else ExitCode.OK)
            if sink is not None:
                write_document(sys.stdout.write, scanned, sink, tally, since, code)
            else:
                _render(scanned, tally)
    finally:
        for log in opened:
            log.close()
    exit_with(code)


@dataclass(frozen=True)
class Scanned:
    """One file's facts, its rows (terminal only), and how many events were kept."""

    name: str
    facts: KernelLogFacts
    rows: list[Row]
    kept: int
    filtered: int


def _scan_one(
    log: LogInput,
    catalogue: XidCatalogue,
    window: timedelta | None,
    now: datetime,
    tally: Tally,
    sink: Spool | None,
) -> Scanned:
    from dolmen.facts.kernel_log.scan import LogScanner

    rows: list[Row] = []
    seen = [0, 0]  # events found, events kept

    def found(ev: KernelEvent) -> None:
        seen[0] += 1
        if window is not None and not _recent(ev, window, now):
            return
        seen[1] += 1
        row = Row(ev, assess(catalogue, ev))
        tally.add(row)
        if sink is not None:
            sink.add(log.name, row)
        else:
            rows.append(row)

    scanner = LogScanner(now=now, on_event=found)
    for block in log.blocks():
        scanner.feed_block(block)
    facts = scanner.facts(source=log.name)
    return Scanned(log.name, facts, rows, seen[1], seen[0] - seen[1])


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
        return catalogue_kind(ev)  # "link_up" for a gained carrier: not counted as a flap

    @property
    def group(self) -> str:
        """The device the event belongs to: ``GPU 0000:38:00.0``, ``NVSwitch ...``, ``link ib6``,
        ``lib libnccl.so.2``, ``host``."""
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
        if ev.kind in ("panic", "oops", "oom_kill", "file_max"):
            return "host"  # the subject validate gives them
        if ev.kind == "segfault":
            return f"lib {ev.device}" if ev.device else "host"
        return ev.device or ev.kind


def assess(catalogue: XidCatalogue, ev: KernelEvent) -> Assessment:
    """The catalogue's verdict on one event, as validate reads it (``assess_event``)."""
    return assess_event(catalogue, ev)


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


def _render(scanned: list[Scanned], tally: Tally) -> None:
    """Plain lines on a pipe; rich colours only when stdout is a terminal."""
    out = _Printer()
    for item in scanned:
        name, facts, rows = item.name, item.facts, item.rows
        span = ""
        if facts.first_time or facts.last_time:
            span = f", {iso(facts.first_time)} .. {iso(facts.last_time)}"
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
    s = tally.summary()
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
        # Log lines, device and file names are someone else's bytes: shown, never obeyed.
        text = printable(text)
        if self._console is None:
            sys.stdout.write(text + "\n")
        else:
            from rich.text import Text

            self._console.print(Text(text, style=style or ""), soft_wrap=True)
