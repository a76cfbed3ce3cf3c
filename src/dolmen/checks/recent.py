"""Which kernel-log events are recent: a window of hours before a reference time.

Shared by the checks that count kernel-log events (XIDs, SXIDs, link flaps).

The reference is the live clock on a live host, the capture time of a snapshot
(``dolmen-snapshot.json`` ``created``), else the last time stamp of the log itself.
Lines with a wall clock compare with it; lines with seconds since boot compare with
the uptime (``proc/uptime``), else with the log's last boot offset. An event whose
age cannot be told counts as recent: a health check must not forget an error because
its line carried no time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import datetime

from dolmen.checks.context import Context
from dolmen.checks.model import Outcome, unknown
from dolmen.compat import UTC, fromisoformat
from dolmen.errors import DolmenError
from dolmen.facts import FactError
from dolmen.facts.kernel_log import KernelEvent, KernelLogFacts
from dolmen.facts.os import OsFacts
from dolmen.facts.reading import unrecorded
from dolmen.frozen import frozen

UNREADABLE_LOG = (
    "Run dolmen as root: reading the kernel log needs CAP_SYSLOG when kernel.dmesg_restrict=1 "
    "(or journalctl -k as a member of adm/systemd-journal)."
)
ABSENT_LOG = (
    "Give dolmen the host's kernel log: run it on the host, or take a bundle there that holds "
    "it (dolmen snapshot -o FILE; or dmesg --time-format iso --decode > dmesg.txt, --from it)."
)


def log_unread(log: KernelLogFacts, *, fabric_manager: bool = False) -> Outcome | None:
    """The ``unknown`` a check returns when the kernel log could not be read, else None.
    nv-fabricmanager's own log in its place holds no kernel record: unknown too, unless the
    check reads what it holds (``fabric_manager``: its NVSwitch errors)."""
    if log.events is not None and (fabric_manager or not log.fabric_manager):
        return None
    why = log.unread.get("events", "unreadable")
    if log.events is not None:
        why = f"{log.source or 'the log'} is nv-fabricmanager's log (NVSwitch errors only)"
    remedy = UNREADABLE_LOG
    if log.events is not None or unrecorded(why):  # not root's business: the bundle lacks it
        remedy = ABSENT_LOG
    return unknown("host", f"the kernel log could not be read: {why}", remedy=remedy)


def grouped(
    log: KernelLogFacts,
    kind: str,
    key: Callable[[KernelEvent], str | None] = lambda ev: ev.bus_id,
) -> dict[str | None, list[KernelEvent]]:
    """The log's events of one kind, grouped by ``key`` (the device's bus id by default),
    in log order."""
    out: dict[str | None, list[KernelEvent]] = defaultdict(list)
    for ev in log.events or ():
        if ev.kind == kind:
            out[key(ev)].append(ev)
    return out


@frozen
class Window:
    """The recent past: ``hours`` before ``now`` (wall clock) or ``now_boot`` (uptime)."""

    hours: float
    now: datetime | None
    now_boot: float | None
    reference: str  # what "now" is, for evidence

    def age_hours(self, ev: KernelEvent) -> float | None:
        """How long before the reference the event happened; None when it cannot be told."""
        if ev.time is not None and self.now is not None:
            t, now = _comparable(ev.time, self.now)
            return max(0.0, (now - t).total_seconds() / 3600)
        if ev.boot_seconds is not None and self.now_boot is not None:
            age = self.now_boot - ev.boot_seconds
            # A boot offset past the uptime is from an earlier boot (pstore, a stale dump).
            return age / 3600 if age >= 0 else None
        return None

    def recent(self, ev: KernelEvent) -> bool:
        """Whether the event is inside the window (events of unknown age are)."""
        age = self.age_hours(ev)
        return age is None or age <= self.hours

    def split(self, events: Iterable[KernelEvent]) -> tuple[list[KernelEvent], list[KernelEvent]]:
        """(recent, older) events."""
        recent: list[KernelEvent] = []
        older: list[KernelEvent] = []
        for ev in events:
            (recent if self.recent(ev) else older).append(ev)
        return recent, older

    def evidence(self) -> dict[str, object]:
        """The window as evidence."""
        return {
            "window_hours": self.hours,
            "reference": self.reference,
            "reference_time": self.now.isoformat(timespec="seconds") if self.now else None,
            "uptime_s": self.now_boot,
        }


def _comparable(t: datetime, now: datetime) -> tuple[datetime, datetime]:
    """Both aware, or both naive local time (``dmesg -T`` prints local time, no zone)."""
    if (t.tzinfo is None) == (now.tzinfo is None):
        return t, now
    if t.tzinfo is None:
        return t, now.astimezone().replace(tzinfo=None)
    return t.astimezone().replace(tzinfo=None), now


def window_hours(ctx: Context) -> float:
    """The window: the check's threshold if the site set one, else [validate] xid_window_hours,
    else the check's default."""
    site = ctx.config.thresholds(ctx.spec.id) if ctx.spec else {}
    if "window_hours" in site:
        return float(site["window_hours"])
    hours = ctx.config.get("validate", "xid_window_hours")
    if isinstance(hours, int | float) and not isinstance(hours, bool):
        return float(hours)
    return float(ctx.limit("window_hours"))


def make_window(ctx: Context, log: KernelLogFacts, hours: float | None = None) -> Window:
    """The window of this run (see the module docstring for the reference); the check
    declares ``os`` facts (uptime) in its needs. ``hours`` defaults to ``window_hours``."""
    hours = window_hours(ctx) if hours is None else hours
    uptime = _uptime(ctx)
    now_boot = uptime if uptime is not None else log.last_boot_seconds
    if ctx.host.kind == "live":
        return Window(hours, datetime.now(UTC), now_boot, "the live clock")
    created = _snapshot_time(ctx)
    if created is not None:
        return Window(hours, created, now_boot, "the snapshot's capture time")
    return Window(hours, log.last_time, now_boot, "the last time stamp of the log")


def _uptime(ctx: Context) -> float | None:
    try:
        os_facts: OsFacts = ctx.os
    except FactError:
        return None
    return os_facts.uptime_s


def _snapshot_time(ctx: Context) -> datetime | None:
    try:
        meta = getattr(ctx.host, "meta", None)  # TreeHost and ArchiveHost: dolmen-snapshot.json
    except DolmenError:  # a snapshot file that is not JSON: no capture time
        return None
    created = meta.get("created") if isinstance(meta, dict) else None
    if not isinstance(created, str):
        return None
    try:
        t = fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)
