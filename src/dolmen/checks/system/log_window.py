"""The kernel-log events of some kinds, split at the check's window, and their worst
severity: what the host-level log checks (panics, OOM kills, segfaults, file-max) share."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.log_severity import STATUS, assess_event
from dolmen.checks.model import Outcome, Status
from dolmen.checks.recent import Window, log_unread, make_window
from dolmen.facts.kernel_log import KernelEvent, KernelLogFacts

_RANK = {Status.PASS: 0, Status.WARN: 1, Status.FAIL: 2}


@dataclass(frozen=True)
class Split:
    """A log's events of some kinds: inside the window and before it."""

    log: KernelLogFacts
    window: Window
    recent: list[KernelEvent]
    older: list[KernelEvent]

    def evidence(self, lines: Sequence[KernelEvent] = ()) -> dict[str, Any]:
        """The window, the counts and the last lines (``lines``, else the recent ones)."""
        shown = list(lines or self.recent)[-5:]
        return {
            **self.window.evidence(),
            "log": self.log.source,
            "recent": len(self.recent),
            "older": len(self.older),
            "lines": [e.raw.strip()[:240] for e in shown],
        }


def split_events(
    ctx: Context,
    kinds: Iterable[str],
    keep: Callable[[KernelEvent], bool] = lambda ev: True,
    events: Iterable[KernelEvent] | None = None,
) -> Split | Outcome:
    """The kernel log's events of ``kinds`` (or of ``events``) that ``keep`` accepts, split
    at the check's own ``window_hours`` limit (not [validate] xid_window_hours: these are
    not Xids); the ``unknown`` of an unreadable log instead."""
    log = ctx.kernel_log
    if events is None and (unread := log_unread(log)) is not None:
        return unread
    wanted = set(kinds)
    picked = [e for e in (log.events or () if events is None else events) if e.kind in wanted]
    window = make_window(ctx, log, float(ctx.limit("window_hours")))
    recent, older = window.split(e for e in picked if keep(e))
    return Split(log, window, recent, older)


def worst(ctx: Context, events: Iterable[KernelEvent]) -> Status:
    """The worst status of the events, each judged by ``log_severity`` (validate and logs
    scan alike)."""
    out = Status.PASS
    for ev in events:
        status = STATUS[assess_event(ctx.kb.xids, ev).severity]
        if _RANK[status] > _RANK[out]:
            out = status
    return out


def when(ev: KernelEvent) -> str:
    """The event's time as a summary shows it: ISO 8601, ``[boot s]``, or "time unknown"."""
    if ev.time is not None:
        return ev.time.isoformat(timespec="seconds")
    if ev.boot_seconds is not None:
        return f"{ev.boot_seconds:.0f} s after boot"
    return "time unknown"
