"""The ``full`` tier's workloads not built yet (NCCL, storage I/O): registered, so
``--level full`` says what it would add, and skipped, so a full run is undecided.

GEMM, memory, PCIe and peer bandwidth have their own modules beside this one.
"""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, skipped


def _later(would: str) -> list[Outcome]:
    """The one outcome of a planned workload: skipped, saying what it would run."""
    return [skipped("host", f"active workloads are not in this release: {would}")]


@check(
    "workload.nccl_allreduce",
    title="Single-node NCCL all-reduce bus bandwidth reaches the published figure",
    level=Level.FULL,
    when=("nvidia_gpu",),
    remedy="Check NVLink/NVSwitch state, fabric manager, and ACS/IOMMU settings.",
    limits={"h100_busbw_gbps": 460, "a100_busbw_gbps": 228},
    source="aznhc thresholds; nccl-tests PERFORMANCE.md busbw formula",
)
def nccl_allreduce(ctx: Context) -> list[Outcome]:
    """Would run all_reduce_perf over every GPU at 16 GB messages and compare busbw."""
    return _later(
        "would run NCCL all_reduce over all GPUs (16 GB messages), "
        f"H100 busbw >= {ctx.limit('h100_busbw_gbps')} GB/s, "
        f"A100 >= {ctx.limit('a100_busbw_gbps')} GB/s"
    )


@check(
    "workload.storage_io",
    title="Local NVMe and the checkpoint file system sustain their expected throughput",
    level=Level.FULL,
    remedy="Check the RAID/mount options and the NVMe health of slow devices.",
    limits={"min_read_gbps": 2.0},
    source="site-set; DGX RAID-0 /raid practice",
)
def storage_io(ctx: Context) -> list[Outcome]:
    """Would read and write a few GiB with direct I/O on data mounts."""
    return _later(
        "would measure sequential direct I/O on data mounts "
        f"(>= {ctx.limit('min_read_gbps')} GB/s read)"
    )
