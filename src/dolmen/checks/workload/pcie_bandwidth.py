"""``workload.pcie_bandwidth``: host-to-device and device-to-host copies per GPU against its
PCIe link's generation and width, the link read while the copy runs (a downtrained slot
shows there, not at idle, where links drop to a low gen to save power)."""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, Status, check, skipped
from dolmen.checks.workload.common import CPU_NOTE, median, result_of
from dolmen.checks.workload.judge import downtrained, judge_rate, pcie_gbps, worst


@check(
    "workload.pcie_bandwidth",
    title="Host-to-GPU and GPU-to-host copies reach a fraction of the PCIe link's rate",
    level=Level.FULL,
    remedy="Reseat the GPU or its riser, check the slot's BIOS link settings and "
    "lspci -vv LnkSta; compare with the node's other GPUs.",
    limits={"min_fraction_of_link": 0.6, "max_below_median": 0.10},
    source="PCI-SIG lane rates after line coding; pinned copies reach about 0.8 of the raw "
    "rate on a healthy Gen4/Gen5 x16 link (nvbandwidth practice); 0.6 is the floor",
)
def pcie_bandwidth(ctx: Context) -> list[Outcome]:
    """One outcome per GPU: the link under load, then h2d and d2h against its rate."""
    result, why = result_of(ctx, "memory")
    if result is None:
        return why
    if result.device == "cpu":
        return [skipped("host", f"{CPU_NOTE}: a CPU run has no device link to copy over")]
    fraction = float(ctx.limit("min_fraction_of_link"))
    below = float(ctx.limit("max_below_median"))
    out: list[Outcome] = []
    ways = ("h2d_gbps", "d2h_gbps")
    mids = {w: median([r for g in result.gpus if (r := getattr(g, w)) is not None]) for w in ways}
    for g in result.gpus:
        link = g.pcie or {}
        raw = pcie_gbps(link.get("gen"), link.get("width"))
        low = downtrained(g.pcie)
        statuses: list[Status] = []
        parts: list[str] = []
        if low:
            statuses.append(Status.FAIL)
            parts.append(f"link downtrained: {low}")
        elif g.pcie is None:
            statuses.append(Status.UNKNOWN)
            parts.append(f"the link could not be read under load ({g.pcie_unread or 'no sample'})")
        for way in ways:
            rate = getattr(g, way)
            judged = judge_rate(
                rate if rate is not None else float("nan"),
                floor=raw * fraction if raw else None,
                median=mids[way],
                peers=len(result.gpus),
                below_median=below,
                unit="GB/s",
            )
            statuses.append(judged.status)
            shown = f"{rate:,.1f} GB/s" if rate is not None else "not measured"
            parts.append(f"{way[:3]} {shown} ({judged.why})")
        on = f"Gen{link['gen']} x{link['width']} ({raw:,.1f} GB/s raw)" if raw else "link unknown"
        evidence = {"pcie": dict(link), "h2d_gbps": g.h2d_gbps, "d2h_gbps": g.d2h_gbps}
        out.append(
            Outcome(worst(statuses), g.subject, f"{on}: " + "; ".join(parts), None, evidence)
        )
    return out
