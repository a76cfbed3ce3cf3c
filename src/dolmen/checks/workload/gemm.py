"""``workload.gemm``: dense GEMM per GPU in each dtype its model supports, against the KB's
dense peak and against the node's median; clocks, power and temperature during the run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, Status, check
from dolmen.checks.workload.common import on_cpu, result_of, spread
from dolmen.checks.workload.judge import Judged, floor_of, flops, judge_rate, worst

if TYPE_CHECKING:
    from dolmen.workloads.gemm import GemmEntry


@check(
    "workload.gemm",
    title="Dense GEMM on every GPU reaches a fraction of the model's peak and of its peers'",
    level=Level.FULL,
    remedy="Compare clocks, power limit and temperature with its peers (nvidia-smi -q -d "
    "PERFORMANCE,POWER); reseat or replace a GPU far below them.",
    limits={"min_fraction_of_peak": 0.6, "max_below_median": 0.10, "min_tflops": {}},
    source="KB dense peaks per dtype (NVIDIA datasheets, kb-sources.md); 10% below the "
    "node's median: imbue's GPU burn compare, DCGM diagnostic practice",
)
def gemm(ctx: Context) -> list[Outcome]:
    """One outcome per GPU: each dtype's TFLOP/s against its floor and its peers."""
    result, why = result_of(ctx, "gemm")
    if result is None:
        return why
    fraction = float(ctx.limit("min_fraction_of_peak"))
    below = float(ctx.limit("max_below_median"))
    site: dict[str, Any] = dict(ctx.limit("min_tflops"))
    entries: tuple[GemmEntry, ...] = result.entries
    peers = {d: sum(1 for e in entries if e.dtype == d) for d in {e.dtype for e in entries}}
    by_gpu: dict[str, list[tuple[GemmEntry, Judged]]] = {}
    for e in entries:
        judged = judge_rate(
            e.tflops,
            floor=floor_of(e.peak_tflops, fraction, site.get(e.dtype)),
            median=e.median_tflops,
            peers=peers[e.dtype],
            below_median=below,
            unit="TFLOP/s",
        )
        by_gpu.setdefault(e.subject, []).append((e, judged))
    out = [_outcome(subject, rows) for subject, rows in by_gpu.items()]
    for gpu, dtype, reason in result.skipped:
        subject = (
            "host"
            if gpu is None
            else next((e.subject for e in entries if e.gpu == gpu), f"gpu:{gpu}")
        )
        out.append(Outcome(Status.UNKNOWN, subject, f"{dtype} GEMM could not run: {reason}"))
    return on_cpu(out) if result.device == "cpu" else out


def _outcome(subject: str, rows: list[tuple[GemmEntry, Judged]]) -> Outcome:
    """One GPU's dtypes in one outcome: the worst status; throttling under load warns."""
    parts: list[str] = []
    evidence: dict[str, Any] = {}
    for e, judged in rows:
        share = f" = {e.tflops / e.peak_tflops:.0%} of {e.peak_tflops:g}" if e.peak_tflops else ""
        parts.append(f"{e.dtype} {flops(e.tflops)}{share} ({judged.why})")
        evidence[e.dtype] = {
            "tflops": round(e.tflops, 3),
            "peak_tflops": e.peak_tflops,
            "median_tflops": round(e.median_tflops, 3),
            "status": judged.status.value,
        }
    status = worst([j.status for _, j in rows])
    throttled = [e.throttled for e, _ in rows]
    if any(throttled):
        parts.append("the clocks throttled under load (power or thermal clock events)")
        status = Status.WARN if status is Status.PASS else status
    elif rows[0][0].gpu is not None and all(t is None for t in throttled):
        parts.append("clock-event reasons could not be sampled")
    samples: dict[str, list[float]] = {}
    for e, _ in rows:
        for key, values in e.samples.items():
            samples.setdefault(key, []).extend(values)
    load = ", ".join(
        text
        for key, unit in (("clocks.sm", "MHz"), ("power.draw", "W"), ("temperature.gpu", "C"))
        if (text := spread(samples.get(key, []), unit))
    )
    summary = "; ".join(parts) + (f"; under load: {load}" if load else "")
    evidence |= {"throttled": any(throttled) if throttled[0] is not None else None}
    return Outcome(status, subject, summary, None, evidence)
