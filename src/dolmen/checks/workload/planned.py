"""The ``full`` tier's active workloads: registered now, so ``--level full`` says what it adds.

They return ``skip`` with what they would run and against which published limit
until the workload runners land (a later issue). They never return ``pass``.
"""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, skipped


def _later(would: str) -> list[Outcome]:
    """The one outcome of a planned workload: skipped, saying what it would run."""
    return [skipped("host", f"active workloads are not in this release: {would}")]


@check(
    "workload.gemm",
    title="Dense bf16 GEMM on every GPU reaches a fraction of the model's peak",
    level=Level.FULL,
    when=("nvidia_gpu",),
    remedy="Reseat or replace a GPU far below its peers; check clocks and power limits.",
    limits={"min_fraction_of_peak": 0.6},
    source="KB peak bf16 dense per model (NVIDIA datasheets); imbue/DCGM r3 burn practice",
)
def gemm(ctx: Context) -> list[Outcome]:
    """Would run a 5-minute bf16 matmul per GPU and compare with the KB's peak and with peers."""
    return _later(
        "would run bf16 GEMM per GPU for 5 min and fail below "
        f"{ctx.limit('min_fraction_of_peak'):.0%} of the KB peak or 10% below peers"
    )


@check(
    "workload.memory_bandwidth",
    title="Device memory bandwidth reaches a fraction of the model's published figure",
    level=Level.FULL,
    when=("nvidia_gpu",),
    remedy="Compare with peers; a GPU far below is a candidate for service.",
    limits={"min_fraction_of_published": 0.8},
    source="KB memory bandwidth per model; Azure measured 4.0-4.5 TB/s STREAM on H200",
)
def memory_bandwidth(ctx: Context) -> list[Outcome]:
    """Would run a device-memory copy kernel and compare with the KB's bandwidth."""
    return _later(
        "would measure device memory bandwidth per GPU against "
        f"{ctx.limit('min_fraction_of_published'):.0%} of the KB figure"
    )
