"""Crash records an earlier boot left: pstore (``sys/fs/pstore/dmesg-*``) and what
systemd-pstore archived of them (``var/lib/systemd/pstore/<id>/dmesg.txt``).

When the kernel panics (or, if configured, Oopses), kmsg_dump writes the end of the
log to persistent storage (ACPI ERST, EFI variables, ramoops); after the reboot the
records appear under ``/sys/fs/pstore``, and systemd-pstore moves them into
``/var/lib/systemd/pstore`` (GPUd reads that folder). A record starts with a
header, ``Panic#1 Part1`` or ``Oops#1 Part1`` (the dump's reason), then the lines
with their ``<6>[ 3098.275469]`` stamps.

A record's lines carry only seconds since *its* boot. ``audit(1753325631.043:87)``
lines carry the wall clock too, which dates that boot, and so the crash: ``time`` is
set from it when the record (or another record, when exactly one boot is dated) has
one, else the time is unknown.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime

from dolmen.compat import UTC
from dolmen.facts.kernel_log.lazy import Lazy
from dolmen.facts.kernel_log.model import KernelEvent
from dolmen.facts.kernel_log.scan import scan_kernel_log
from dolmen.host import Host

PSTORE = "sys/fs/pstore"
ARCHIVE = "var/lib/systemd/pstore"
GLOBS = (f"{PSTORE}/dmesg-*", f"{ARCHIVE}/*/dmesg.txt")
MAX_FILES = 256  # ERST and EFI keep a handful; more is a folder nobody cleaned, read the newest
CRASHES = ("panic", "oops")
_HEADER = Lazy(r"^(Panic|Oops)#\d+ Part\d+", re.M)
_AUDIT = Lazy(r"^<\d+>\[\s*(\d+\.\d+)\] audit: type=\d+ audit\((\d+\.\d+):", re.M)


def read_pstore(host: Host) -> tuple[tuple[KernelEvent, ...] | None, tuple[str, ...], str | None]:
    """(crash events, files read, why they could not be looked for)."""
    if not (host.is_dir(PSTORE) or host.is_dir(ARCHIVE)):
        if host.kind == "live":
            return None, (), f"not supported: pstore is not mounted ({PSTORE})"
        return None, (), f"not in this bundle: {PSTORE}"
    files = [p for pattern in GLOBS for p in host.glob(pattern)][-MAX_FILES:]
    texts: dict[str, str] = {}
    for path in files:
        try:
            texts[path] = host.read(path)
        except PermissionError:
            return None, tuple(files), f"insufficient permissions: {path} (run as root)"
        except OSError as e:
            return None, tuple(files), f"unreadable: {path}: {e.strerror or e}"
    return parse_pstore(texts), tuple(files), None


def parse_pstore(texts: dict[str, str]) -> tuple[KernelEvent, ...]:
    """The panic and Oops events of pstore records (pure): the lines' own events, else one
    from the record's ``Panic#``/``Oops#`` header; each dated from its boot when it can be."""
    boots = {path: _boot_epoch(text) for path, text in texts.items()}
    dated = {round(b) for b in boots.values() if b is not None}
    shared = next(iter(dated)) if len(dated) == 1 else None
    out: list[KernelEvent] = []
    for path, text in texts.items():
        events = [e for e in scan_kernel_log(text).events or () if e.kind in CRASHES]
        if not events and (head := _HEADER.search(text)):
            kind = "panic" if head[1] == "Panic" else "oops"
            line_no = text.count("\n", 0, head.start()) + 1
            what = f"{head[0]} (a {head[1].lower()} dump; the record keeps no panic or Oops line)"
            events = [KernelEvent(kind, line_no, what, head[0], detail=f"{head[1]} record")]
        boot = boots[path] if boots[path] is not None else shared
        out.extend(_dated(replace(e, device=path), boot) for e in events)
    return tuple(out)


def _boot_epoch(text: str) -> float | None:
    """When the record's boot began (UNIX seconds), from its last audit line."""
    last = None
    for last in _AUDIT.finditer(text):  # noqa: B007 - the loop keeps the last match
        continue
    if last is None:
        return None
    return float(last[2]) - float(last[1])


def _dated(ev: KernelEvent, boot: float | None) -> KernelEvent:
    if boot is None or ev.boot_seconds is None or ev.time is not None:
        return ev
    try:
        when = datetime.fromtimestamp(boot + ev.boot_seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return ev
    return replace(ev, time=when, clock="absolute")
