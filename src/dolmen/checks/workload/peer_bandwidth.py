"""``workload.peer_bandwidth``: GPU-to-GPU copies for every ordered pair (nvbandwidth's
matrix), over NVLink where ``nvidia-smi topo -m`` shows it, else over PCIe."""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, skipped
from dolmen.checks.workload.common import CPU_NOTE, median, result_of
from dolmen.checks.workload.judge import Judged, judge_rate, pcie_gbps, worst


@check(
    "workload.peer_bandwidth",
    title="Every GPU pair copies at a fraction of its NVLink (or PCIe) rate and of its peers'",
    level=Level.FULL,
    needs=("topology",),
    remedy="Check nvidia-smi nvlink -s and the fabric manager; on PCIe, ACS and IOMMU "
    "settings (peer-to-peer copies bounce through the host when ACS redirects them).",
    limits={"min_fraction_of_nvlink": 0.6, "min_fraction_of_pcie": 0.3, "max_below_median": 0.10},
    source="KB NVLink bandwidth per model (bidirectional: half each way); nvbandwidth "
    "practice; PCIe floor low on purpose (peer copies may go through the host)",
)
def peer_bandwidth(ctx: Context) -> list[Outcome]:
    """One outcome per source GPU: its slowest pair, each pair in the evidence."""
    result, why = result_of(ctx, "memory")
    if result is None:
        return why
    if result.device == "cpu":
        return [skipped("host", f"{CPU_NOTE}: a CPU run has no GPU pair")]
    if len(result.peer_gpus) < 2:
        return [skipped("host", "one GPU: no pair to copy between")]
    paths = _paths(ctx)
    model = _nvlink_gbps(ctx, result.models)
    link = {
        g.gpu: pcie_gbps((g.pcie or {}).get("gen"), (g.pcie or {}).get("width"))
        for g in result.gpus
    }
    subjects = {g.gpu: g.subject for g in result.gpus}
    gpus = result.peer_gpus
    rates = {
        (a, b): result.peer_gbps[i][j]
        for i, a in enumerate(gpus)
        for j, b in enumerate(gpus)
        if a != b
    }
    by_kind: dict[str, list[float]] = {}
    for (a, b), r in rates.items():
        if r is not None:
            by_kind.setdefault(paths.get((a, b), "unknown"), []).append(r)
    out: list[Outcome] = []
    for a in gpus:
        judged: list[tuple[int, float | None, str, Judged]] = []
        for b in gpus:
            if a == b:
                continue
            kind = paths.get((a, b), "unknown")
            floor = None
            if kind == "nvlink" and model:
                floor = model / 2 * float(ctx.limit("min_fraction_of_nvlink"))
            elif kind == "pcie" and (la := link.get(a)) and (lb := link.get(b)):
                floor = min(la, lb) * float(ctx.limit("min_fraction_of_pcie"))
            rate = rates[(a, b)]
            peers = by_kind.get(kind, [])
            judged.append(
                (
                    b,
                    rate,
                    kind,
                    judge_rate(
                        rate if rate is not None else float("nan"),
                        floor=floor,
                        median=median(peers),
                        peers=len(peers),
                        below_median=float(ctx.limit("max_below_median")),
                        unit="GB/s",
                    ),
                )
            )
        status = worst([j.status for *_, j in judged])
        slow = min(judged, key=lambda t: t[1] if t[1] is not None else -1.0)
        b, rate, kind, j = slow
        shown = f"{rate:,.1f} GB/s" if rate is not None else "no rate"
        summary = f"slowest pair to GPU {b} over {kind}: {shown} ({j.why}); {len(judged)} pairs"
        evidence: dict[str, Any] = {
            "pairs": {
                str(b): {"gbps": r, "path": k, "status": jj.status.value} for b, r, k, jj in judged
            }
        }
        out.append(Outcome(status, subjects.get(a, f"gpu:{a}"), summary, None, evidence))
    return out


def _paths(ctx: Context) -> dict[tuple[int, int], str]:
    """(a, b) -> "nvlink" | "pcie" from ``nvidia-smi topo -m`` (NV# is NVLink); empty where
    the matrix was not read (the pairs are then judged against each other only)."""
    try:
        matrix = ctx.topology.matrix
    except Exception:  # facts that could not be read: no path, no absolute floor
        return {}
    if matrix is None:
        return {}
    out: dict[tuple[int, int], str] = {}
    for src, row in matrix.paths.items():
        for dst, path in row.items():
            if src.startswith("GPU") and dst.startswith("GPU") and src != dst:
                a, b = src[3:], dst[3:]
                if a.isdigit() and b.isdigit():
                    out[(int(a), int(b))] = "nvlink" if path.links > 0 else "pcie"
    return out


def _nvlink_gbps(ctx: Context, models: dict[int, str]) -> float | None:
    """The KB's NVLink bandwidth of the node's model (one figure: the lowest of its GPUs)."""
    figures = []
    for model_id in set(models.values()):
        model = ctx.kb.gpus.get(model_id)
        if model is not None and model.nvlink_bandwidth_gbs:
            figures.append(model.nvlink_bandwidth_gbs)
    return min(figures) if figures else None
