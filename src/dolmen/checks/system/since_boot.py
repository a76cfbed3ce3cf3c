"""What one reading of a counter that runs since boot proves, without a second reading.

Error counters of the kernel and the hardware (InfiniBand PMA counters, a netdev's
``carrier_down_count``, PCIe AER totals) start at zero when the driver loads, at most
``uptime`` ago, and only grow until someone clears them. The tools that set the
published thresholds read them twice and judge the increase (Azure healthagent: 3
``link_downed`` within 3 hours; DCGM: 8 PCIe replays per minute); dolmen's quick tier
reads them once. One reading still proves something:

- spread over ``uptime``, ``count`` events put at least ``count / ceil(uptime / window)``
  of them into one window, so "``limit`` per window" was certainly crossed when
  ``count >= limit * ceil(uptime / window)`` (pigeonhole);
- below that, the events may have come in one burst long ago or one by one: a reading
  cannot tell, and says so instead of alarming.

A counter cleared after boot only weakens these bounds: they never raise a false alarm.
"""

from __future__ import annotations

import math

from dolmen.checks.context import Context
from dolmen.facts import FactError


def uptime_s(ctx: Context) -> float | None:
    """Seconds since boot from the ``os`` facts (the check declares them); None if unknown."""
    try:
        value = ctx.os.uptime_s
    except FactError:
        return None
    return value if value is not None and value > 0 else None


def windows(uptime: float, window_s: float) -> int:
    """How many windows of ``window_s`` seconds cover the uptime (at least one)."""
    return max(1, math.ceil(uptime / window_s))


def allowance(limit: float, window_s: float, uptime: float | None) -> float | None:
    """The count at and above which ``limit`` per window is proven crossed; None if unknown."""
    if uptime is None:
        return None
    return limit * windows(uptime, window_s)


def describe_uptime(uptime: float | None) -> str:
    """``38.0 days``, ``5.2 h`` or ``unknown``, for summaries."""
    if uptime is None:
        return "unknown"
    if uptime >= 86400:
        return f"{uptime / 86400:.1f} days"
    return f"{uptime / 3600:.1f} h"
