"""``workload.nccl_allreduce``: all_reduce bus bandwidth at the largest size (1 GiB) across
the node's GPUs, against the published figure of the GPU model.

The figures are aznhc's (Azure's node health checks) for 8-GPU NVSwitch nodes: H100 SXM
460 GB/s (ND H100 v5), A100 SXM 228 GB/s (ND A100 v4). They are measured practice, not
datasheet figures, so they sit here as limits (keyed by the start of the KB model id;
a site adds its own, ``"h200-sxm" = 470``) rather than in the KB's datasheet rows. A
model without a figure, a run on other than 8 GPUs, a run that stopped before 1 GiB
(unknown), and a CPU run (gloo between
processes: the machinery, not a GPU) say what they measured and skip: they never claim
a GPU is healthy.
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown
from dolmen.checks.workload.common import on_cpu, result_of
from dolmen.facts import FactError

LIMIT = "min_busbw_gbps"
FIGURE_WORLD = 8  # aznhc's figures are for a whole 8-GPU NVSwitch node


@check(
    "workload.nccl_allreduce",
    title="NCCL all-reduce bus bandwidth across the node's GPUs reaches the published figure",
    level=Level.FULL,
    needs=("gpu",),
    remedy=(
        "Check NVLink/NVSwitch state (nvidia-smi nvlink -s), the fabric manager, and ACS/IOMMU "
        "settings; rerun nccl-tests all_reduce_perf -b 8 -e 1G -f 2 -g <GPUs> to confirm."
    ),
    limits={LIMIT: {"h100-sxm": 460, "a100-sxm": 228}},
    source="aznhc NCCL thresholds (ND H100 v5, ND A100 v4); nccl-tests PERFORMANCE.md busbw",
)
def nccl_allreduce(ctx: Context) -> list[Outcome]:
    """Reads the ``collective`` workload and ``gpu`` facts (the model of the GPUs)."""
    result, not_run = result_of(ctx, "collective")
    if result is None:
        return not_run
    run = result.run("all_reduce")
    top = run.largest if run is not None else None
    if run is None or top is None:
        return [unknown("host", "the collective ran but measured no all_reduce size")]
    ev: dict[str, Any] = {
        "world": run.world,
        "backend": run.backend,
        "bytes": top.bytes,
        "busbw_gbps": round(top.busbw_gbps, 3),
        "algbw_gbps": round(top.algbw_gbps, 3),
        "time_us": round(top.time_us, 1),
        "stopped": result.stopped,
    }
    said = (
        f"all_reduce on {run.world} {run.backend} ranks: busbw {top.busbw_gbps:.3g} GB/s "
        f"at {_size(top.bytes)}"
    )
    if result.device == "cpu":
        return on_cpu([skipped("host", said, **ev)])
    from dolmen.workloads.collective import FULL_SIZES

    if top.bytes < FULL_SIZES[-1]:
        stopped = result.stopped or "the sweep ended early"
        return [
            unknown(
                "host",
                f"{said}: {stopped}; the figure is for {_size(FULL_SIZES[-1])}",
                remedy="Raise [workloads] collective_s in dolmen.toml and run again.",
                **ev,
            )
        ]
    model, figure = _figure(ctx, ctx.limit(LIMIT))
    ev.update(model=model, min_busbw_gbps=figure)
    if figure is None:
        return [skipped("host", f"{said}; no published figure for {model}", **ev)]
    if run.world != FIGURE_WORLD:
        return [skipped("host", f"{said}; the {model} figure is for {FIGURE_WORLD} GPUs", **ev)]
    if top.busbw_gbps < figure:
        return [failed("host", f"{said}, below the {figure:g} GB/s expected of {model}", **ev)]
    return [passed("host", f"{said} (>= {figure:g} GB/s for {model})", **ev)]


def _figure(ctx: Context, limits: dict[str, float]) -> tuple[str, float | None]:
    """(the GPUs' model, its figure): one KB model for every GPU, the longest matching
    limit key; None where the GPUs differ or the model has no figure."""
    try:
        names = {g.name for g in ctx.gpu.gpus}
    except FactError as e:
        return f"no GPU model read ({e})", None
    models = {ctx.kb.gpus.match(n) if n else None for n in names}
    if len(models) != 1 or None in models:
        return " / ".join(sorted(n or "?" for n in names)) or "no GPU model read", None
    model = models.pop()
    assert model is not None
    keys = sorted((k for k in limits if model.id.startswith(k)), key=len)
    return model.id, (float(limits[keys[-1]]) if keys else None)


def _size(nbytes: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift} {unit}"
    return f"{nbytes} B"
