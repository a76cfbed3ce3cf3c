"""Block-device and filesystem I/O errors in the kernel log ("I/O error, dev sda, sector ...",
"critical medium error", "Buffer I/O error on dev", NVMe command errors and timeouts,
"EXT4-fs error").

GCM's io-errors check fails a node on any "I/O error, dev nvme" line; dolmen counts every
disk within the kernel-log window (``checks.recent``). Each line's severity is
``checks.log_severity``'s (through ``system.log_window.worst``), as ``dolmen logs scan``
reads it: critical (fail), except on loop, optical and RAM disks (warn only: a squashfs
image or an empty drive tray is not a failing disk).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, Status, check, passed
from dolmen.checks.recent import log_unread, make_window
from dolmen.checks.system.log_window import worst
from dolmen.facts.kernel_log import KernelEvent


@check(
    "storage.io_errors",
    title="No block-device or filesystem I/O errors in the kernel log",
    level=Level.QUICK,
    needs=("kernel_log", "os"),
    remedy=(
        "Find the device in dmesg, read its health (nvme smart-log /dev/nvmeX, smartctl -a "
        "/dev/sdX) and replace it if media errors grow; check the filesystem (fsck) afterwards."
    ),
    limits={"window_hours": 24},
    source="GCM check-syslogs io-errors: any 'I/O error, dev nvme' is critical",
)
def io_errors(ctx: Context) -> list[Outcome]:
    """Counts io_error events per device in the window; older ones are evidence only."""
    log = ctx.kernel_log
    if (unread := log_unread(log)) is not None:
        return [unread]
    window = make_window(ctx, log, float(ctx.limit("window_hours")))
    recent: dict[str, list[KernelEvent]] = defaultdict(list)
    older: dict[str, int] = defaultdict(int)
    for ev in log.events or ():
        if ev.kind != "io_error" or not ev.device:
            continue
        if window.recent(ev):
            recent[ev.device].append(ev)
        else:
            older[ev.device] += 1
    span: dict[str, Any] = window.evidence()
    out: list[Outcome] = []
    for device, events in sorted(recent.items()):
        kinds = sorted({e.detail.split(",")[0] for e in events if e.detail})
        summary = f"{len(events)} I/O error(s) in the last {window.hours:g} h: {', '.join(kinds)}"
        info = {"errors": len(events), "lines": [e.raw.strip() for e in events[-5:]], **span}
        status = worst(ctx, events)
        if status is not Status.PASS:  # a line the catalogue calls informational is no error
            out.append(Outcome(status, f"disk:{device}", summary, None, info))
    if not out:
        msg = f"no I/O error in the kernel log's last {window.hours:g} h"
        out.append(passed("host", msg, older=dict(older), **span))
    return out
