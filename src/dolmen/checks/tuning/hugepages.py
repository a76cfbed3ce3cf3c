"""``tuning.hugepages``: persistent huge page reservations leave the host memory to run."""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, skipped, unknown, warned


@check(
    "tuning.hugepages",
    title="Reserved huge pages do not take more than half of the memory",
    level=Level.STANDARD,
    needs=("tuning", "memory"),
    remedy="Lower the reservation (vm.nr_hugepages, or the profile's [hugepages] entry).",
    limits={"max_share": 0.5},
    source=(
        "dolmen's judgement; NVIDIA's h100-inference profile reserves 16 GiB "
        "(hugepagesz=2M hugepages=8192), which a small host cannot spare"
    ),
    gating=False,
)
def hugepages(ctx: Context) -> list[Outcome]:
    """Reads the huge page pools (size -> reserved, free) and the memory total."""
    t, total = ctx.tuning, ctx.memory.total_bytes
    reserved = {kb: p.total or 0 for kb, p in t.hugepages.items()}
    taken = sum(kb * 1024 * n for kb, n in reserved.items())
    pools = {f"{kb}kB": n for kb, n in reserved.items() if n}
    if not pools and "hugepages" in t.unread:
        return [skipped("host", t.unread["hugepages"])]
    if not pools:
        return [passed("host", "no persistent huge pages reserved")]
    if total is None:
        return [
            unknown("host", "huge pages reserved but the memory size is unreadable", pools=pools)
        ]
    share = taken / total
    free = sum(kb * 1024 * (p.free or 0) for kb, p in t.hugepages.items())
    ev: dict[str, Any] = {
        "pools": pools,
        "reserved_bytes": taken,
        "free_bytes": free,
        "share": round(share, 3),
    }
    if share > float(ctx.limit("max_share")):
        return [
            warned(
                "host", f"huge pages hold {share:.0%} of memory: the rest of the host starves", **ev
            )
        ]
    return [
        passed(
            "host", f"{taken / 2**30:.1f} GiB of huge pages reserved ({share:.0%} of memory)", **ev
        )
    ]
