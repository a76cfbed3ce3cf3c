"""One kernel-log event's severity, the same for ``validate`` and ``dolmen logs scan``.

The table is ``kb/data/xids.toml`` (Xids, SXids, and the ``[[event]]`` rows of the
events without a number); ``assess_event`` adds the rules a row cannot hold because
they depend on the line itself: a gained carrier is no flap (``link_up``), a loop or
optical disk's I/O error warns only, an OOM kill inside a memory cgroup's own limit
and a segfault outside the NVIDIA stack only inform. ``STATUS`` maps a severity onto
a check status. The checks that judge one event at a time read both; the ones that
count (flaps per interface, AER lines per minute) start from the same severities.
"""

from __future__ import annotations

from dolmen.checks.model import Status
from dolmen.facts.kernel_log import KernelEvent
from dolmen.kb.xids import Assessment, XidCatalogue

STATUS = {"critical": Status.FAIL, "warn": Status.WARN, "info": Status.PASS}
# Loop, optical and RAM disks: a squashfs image or an empty tray, not a failing disk.
SOFT_DISKS = ("loop", "sr", "ram", "zram")
# Libraries of the NVIDIA stack: a crash in one of them concerns the GPU node.
NVIDIA_LIBS = ("libnccl", "libcuda", "libnvidia", "libcublas", "libcudnn", "libnvrtc", "libnvml")


def catalogue_kind(ev: KernelEvent) -> str:
    """The catalogue row an event reads: its kind, except a link that came up (``link_up``)."""
    if ev.kind == "ib_flap" and ev.detail == "up":
        return "link_up"
    return ev.kind


def nvidia_library(ev: KernelEvent) -> bool:
    """Whether a segfault event's library is one of the NVIDIA stack's."""
    lib = (ev.device or "").rsplit("/", 1)[-1]
    return lib.startswith(NVIDIA_LIBS)


def assess_event(catalogue: XidCatalogue, ev: KernelEvent) -> Assessment:
    """Severity and action of one event (see module docstring)."""
    kind = catalogue_kind(ev)
    a = catalogue.assess(kind, ev.xid, fatal=ev.fatal, recovery=ev.recovery)
    if kind == "io_error" and (ev.device or "").startswith(SOFT_DISKS):
        return _capped(a, "warn")
    if kind == "oom_kill" and ev.detail == "memcg":
        return _capped(a, "info")
    if kind == "segfault" and not nvidia_library(ev):
        return _capped(a, "info")
    return a


_RANK = {"info": 0, "warn": 1, "critical": 2}


def _capped(a: Assessment, severity: str) -> Assessment:
    if _RANK[a.severity] <= _RANK[severity]:
        return a
    return Assessment(severity, a.action, a.meaning, a.entry)
