"""``dolmen logs scan``: explain the Xid, SXid and link events of kernel logs.

Each FILE (``-`` for stdin; a ``.gz`` from logrotate is read as is) may be in any
format ``dolmen.facts.kernel_log`` reads: dmesg (plain, -T, --time-format iso,
--decode), /dev/kmsg, journalctl -k, syslog, pstore dumps, nv-fabricmanager logs.
Events are grouped by device (GPU bus id, NVSwitch, interface) with the meaning,
severity and action of ``kb/data/xids.toml``, then a summary line.

Exit codes: 0 no critical event, 1 critical events found, 2 unreadable input.

By default each code is summarised (``Xid 79  critical ... x3 on 2 GPUs``, with its
first and last line and their times); ``-v`` prints every event line as well.

Exit codes: 0 no critical event, 1 critical events found, 2 unreadable input.

``--json`` prints one document, schema ``dolmen.logscan/1`` (``dolmen schema logscan``
prints its JSON Schema; docs/contracts.md)::

    {"schema": "dolmen.logscan/1",
     "since": "2h" | null,                 # the --since option as given
     "anchor": "end" | "now" | null,       # where --since counted back from
     "files": [{"path", "format", "lines", "first_time", "last_time",
                "first_boot_seconds", "last_boot_seconds", "events", "filtered",
                "window": {"start", "end", "start_boot_seconds", "end_boot_seconds"} | null}],
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
``--since`` keeps the events of the last DURATION *of the logs*: counted back from the
newest time in the files given (an archived log's last line), or from now with
``--anchor now`` (``cli/logs_window.py``); the output says which. ``undated`` counts the
kept events without a wall-clock time.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any

import click

from dolmen.checks.log_severity import assess_event, catalogue_kind
from dolmen.cli.logs_input import LogInput, open_log
from dolmen.cli.logs_json import SCHEMA, Spool, Tally, event_doc, file_doc, iso, write_document
from dolmen.cli.logs_text import TextReport
from dolmen.cli.logs_window import END, NOW, Span, Window, make_window
from dolmen.cli.main import exit_with
from dolmen.errors import ExitCode
from dolmen.values.duration import parse_duration

if TYPE_CHECKING:
    from dolmen.facts.kernel_log import KernelEvent, KernelLogFacts
    from dolmen.kb.xids import Assessment, XidCatalogue

__all__ = ["logs", "parse_duration"]


@click.group()
def logs() -> None:
    """Explain XID/SXID/IB events in kernel logs."""


@logs.command()
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--json", "as_json", is_flag=True, help=f"Print the {SCHEMA} JSON document.")
@click.option(
    "--since",
    metavar="DURATION",
    help="Only events of the last DURATION of the logs (30m, 2h, 7d), counted back from "
    "their end (an archived log's last line), not from now; see --anchor.",
)
@click.option(
    "--anchor",
    type=click.Choice([END, NOW]),
    default=END,
    show_default=True,
    help="Where --since counts back from: the end of the logs, or now.",
)
@click.option("-v", "--verbose", is_flag=True, help="Every event line, not only each code's.")
def scan(
    files: tuple[str, ...], as_json: bool, since: str | None, anchor: str, verbose: bool
) -> None:
    """Explain the events of kernel logs (dmesg, journalctl -k, syslog, kmsg; - for stdin).

    Prints a summary per code (count, devices, first and last line); -v every line.
    Exit codes: 0 no critical event, 1 critical events found, 2 unreadable input.
    """
    from dolmen.kb.xids import load_xids

    length = parse_duration(since, what="--since") if since else None
    opened: list[LogInput] = []
    try:
        for name in files:  # every file opens and starts as text, or exit 2 before any output
            opened.append(open_log(name))
        catalogue = load_xids()
        now = datetime.now()
        with (
            tempfile.TemporaryFile("w+", encoding="utf-8") as found,
            tempfile.TemporaryFile("w+", encoding="utf-8") as kept_spool,
        ):
            # Every event goes to a spool as it is found: the window of --since is known
            # only once the logs' ends are, and memory stays bounded whatever their size.
            scanned = [_scan_one(i, log, catalogue, now, found) for i, log in enumerate(opened)]
            window = None
            if since and length is not None:
                window = make_window(since, length, anchor, [s.span for s in scanned])
            tally = Tally()
            sink = Spool(kept_spool) if as_json else None
            report = None if as_json else TextReport(len(scanned), verbose=verbose)
            kept = _replay(found, window, tally, sink, report, len(scanned))
            code = int(ExitCode.UNHEALTHY if tally.critical else ExitCode.OK)
            if sink is not None:
                docs = [
                    file_doc(s, kept[i], None if window is None else window.file_doc(i, s.span))
                    for i, s in enumerate(scanned)
                ]
                anchored = None if window is None else (window.since, window.anchor)
                write_document(sys.stdout.write, docs, sink, tally, anchored, code)
            elif report is not None:
                heads = [(_head(s), _window_line(window, i, s)) for i, s in enumerate(scanned)]
                report.render(heads, tally.summary())
    finally:
        for log in opened:
            log.close()
    exit_with(code)


def _replay(
    found: IO[str],
    window: Window | None,
    tally: Tally,
    sink: Spool | None,
    report: TextReport | None,
    files: int,
) -> list[int]:
    """The spooled events the window keeps, counted and handed on; kept per file."""
    kept = [0] * files
    found.seek(0)
    for line in found:
        head, _, body = line.partition("\t")
        index, doc = int(head), json.loads(body)
        if window is not None and not window.keeps(index, doc["time"], doc["boot_seconds"]):
            continue
        kept[index] += 1
        tally.add(doc)
        if sink is not None:
            sink.add(doc)
        if report is not None:
            report.add(index, doc)
    return kept


def _head(s: Scanned) -> str:
    facts = s.facts
    span = ""
    if facts.first_time or facts.last_time:
        span = f", {iso(facts.first_time)} .. {iso(facts.last_time)}"
    elif facts.first_boot_seconds is not None:
        span = f", [{facts.first_boot_seconds:.3f}] .. [{facts.last_boot_seconds or 0:.3f}]"
    return f"{s.name}: {facts.format or 'empty'}, {facts.lines} lines{span}"


def _window_line(window: Window | None, index: int, s: Scanned) -> str | None:
    return None if window is None else window.describe(index, s.span)


@dataclass(frozen=True)
class Scanned:
    """One file's facts, how many events it holds, and what the window needs of it."""

    name: str
    facts: KernelLogFacts
    found: int
    span: Span


def _scan_one(
    index: int, log: LogInput, catalogue: XidCatalogue, now: datetime, spool: IO[str]
) -> Scanned:
    from dolmen.facts.kernel_log.scan import LogScanner

    state: dict[str, Any] = {"found": 0, "boot": None, "ordered": True}

    def found(ev: KernelEvent) -> None:
        state["found"] += 1
        if ev.boot_seconds is not None:
            if state["boot"] is not None and ev.boot_seconds < state["boot"]:
                state["ordered"] = False  # the seconds went back: a reboot inside the file
            state["boot"] = ev.boot_seconds
        doc = event_doc(log.name, Row(ev, assess(catalogue, ev)))
        spool.write(f"{index}\t{json.dumps(doc)}\n")

    scanner = LogScanner(now=now, on_event=found)
    for block in log.blocks():
        scanner.feed_block(block)
    facts = scanner.facts(source=log.name)
    last_boot = facts.last_boot_seconds
    ordered = state["ordered"] and (
        state["boot"] is None or (last_boot is not None and state["boot"] <= last_boot)
    )
    has_wall = facts.first_time is not None or facts.last_time is not None
    span = Span(facts.last_time, last_boot, ordered, has_wall)
    return Scanned(log.name, facts, state["found"], span)


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
