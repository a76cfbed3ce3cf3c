"""``workload.memory_bandwidth``: device-to-device copy per GPU against the KB's memory
bandwidth and against the node's median."""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check
from dolmen.checks.workload.common import median, on_cpu, result_of
from dolmen.checks.workload.judge import floor_of, judge_rate


@check(
    "workload.memory_bandwidth",
    title="Device memory copy bandwidth reaches a fraction of the model's published figure",
    level=Level.FULL,
    remedy="Compare with its peers and with nvidia-smi -q -d ECC,ROW_REMAPPER; a GPU far "
    "below is a candidate for service.",
    limits={"min_fraction_of_published": 0.8, "max_below_median": 0.10, "min_gbps": 0.0},
    source="KB memory bandwidth per model (datasheets); Azure measured 4.0-4.5 TB/s STREAM "
    "on an H200 of 4.8 (kb-sources.md): 0.8 leaves room for a healthy board",
)
def memory_bandwidth(ctx: Context) -> list[Outcome]:
    """One outcome per GPU: the copy rate (read + write) against its floor and peers."""
    result, why = result_of(ctx, "memory")
    if result is None:
        return why
    fraction = float(ctx.limit("min_fraction_of_published"))
    site = float(ctx.limit("min_gbps")) or None
    rates = [g.d2d_gbps for g in result.gpus]
    mid = median(rates)
    out: list[Outcome] = []
    for g in result.gpus:
        judged = judge_rate(
            g.d2d_gbps,
            floor=floor_of(g.published_gbps, fraction, site),
            median=mid,
            peers=len(rates),
            below_median=float(ctx.limit("max_below_median")),
            unit="GB/s",
        )
        share = (
            f" = {g.d2d_gbps / g.published_gbps:.0%} of {g.published_gbps:g}"
            if g.published_gbps
            else ""
        )
        evidence: dict[str, Any] = {
            "d2d_gbps": round(g.d2d_gbps, 2),
            "published_gbps": g.published_gbps,
        }
        out.append(
            Outcome(
                judged.status,
                g.subject,
                f"device copy {g.d2d_gbps:,.1f} GB/s{share} ({judged.why})",
                None,
                evidence,
            )
        )
    return on_cpu(out) if result.device == "cpu" else out
