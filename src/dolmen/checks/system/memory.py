"""System memory: the size the node should have, and memory left for the next job.

``MemTotal`` is what the kernel manages, a few percent under the installed DIMMs
(firmware and kernel reservations); aznhc compares it with the size expected for
the VM within 5 %. A missing DIMM or a disabled memory channel shows as a larger
gap. ``MemAvailable`` (the kernel's estimate of what can be allocated without
swapping) very low between jobs means a leak or a stuck process.
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, failed, passed, unknown, warned

GIB = 2**30


@check(
    "system.memory",
    title="Memory is the expected size and enough of it is available",
    level=Level.QUICK,
    needs=("memory",),
    remedy=(
        "Size off: check the BMC's event log (ipmitool sel list) and dmidecode -t memory for a "
        "missing or disabled DIMM, reseat it. Little available: find what holds it (ps aux "
        "--sort=-rss | head; leftover job processes, a full tmpfs such as /dev/shm)."
    ),
    limits={"expected_gib": None, "tolerance_pct": 5.0, "min_available_pct": 5.0},
    source="aznhc: MemTotal within 5 % of the expected size; min_available_pct is dolmen's",
)
def memory(ctx: Context) -> list[Outcome]:
    """Reads MemTotal and MemAvailable (proc/meminfo)."""
    facts = ctx.memory
    total, avail = facts.total_bytes, facts.available_bytes
    if total is None:
        return [unknown("host", f"MemTotal unreadable: {facts.unread.get('total_bytes', '?')}")]
    ev: dict[str, Any] = {"total_gib": round(total / GIB, 1)}
    out: list[Outcome] = []
    want = ctx.limit("expected_gib")
    if want is not None:
        tol = float(ctx.limit("tolerance_pct"))
        ev |= {"expected_gib": float(want), "tolerance_pct": tol}
        gap = 100.0 * (total / GIB - float(want)) / float(want)
        if abs(gap) > tol:
            msg = f"MemTotal {total / GIB:.1f} GiB, expected {float(want):g} GiB (±{tol:g} %)"
            out.append(failed("host", msg, **ev))
    if avail is None:
        why = facts.unread.get("available_bytes", "?")
        out.append(unknown("host", f"MemAvailable unreadable: {why}", **ev))
        return out
    pct = 100.0 * avail / total
    ev["available_pct"] = round(pct, 1)
    low = float(ctx.limit("min_available_pct"))
    if pct < low:
        msg = f"only {pct:.1f} % of memory available ({avail / GIB:.1f} GiB; limit {low:g} %)"
        out.append(warned("host", msg, **ev))
    if not out:
        size = f"{total / GIB:.1f} GiB" + (" as expected" if want is not None else "")
        out.append(passed("host", f"{size}, {pct:.0f} % available", **ev))
    return out
