"""Driver, CUDA, memory, CPUs and NVMe count against the baseline."""

from __future__ import annotations

from dolmen.checks.baseline import baseline_of
from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, failed, passed, unknown, warned


@check(
    "baseline.software",
    title="Driver and CUDA versions are the baseline's",
    level=Level.QUICK,
    needs=("gpu",),
    when=("baseline",),
    remedy="Install the fleet's driver version (or capture a new baseline after a planned "
    "upgrade): nodes of one pool should not mix driver versions.",
)
def software(ctx: Context) -> list[Outcome]:
    """Compares nvidia-smi's driver and CUDA versions with the baseline's."""
    b = baseline_of(ctx)
    out: list[Outcome] = []
    for what, want, got in (
        ("driver", b.driver_version, ctx.gpu.driver_version),
        ("CUDA", b.cuda_version, ctx.gpu.cuda_version),
    ):
        if want is None:
            continue
        if got is None:
            out.append(unknown("host", f"{what} version unreadable (baseline {want})"))
        elif got != want:
            out.append(warned("host", f"{what} {got}, baseline {want}", found=got, baseline=want))
        else:
            out.append(passed("host", f"{what} {got} as in the baseline"))
    return out or [passed("host", "baseline records no driver")]


@check(
    "baseline.system",
    title="Memory, CPUs and NVMe drives match the baseline",
    level=Level.QUICK,
    needs=("memory", "cpu", "storage"),
    when=("baseline",),
    remedy="A DIMM, a CPU or a drive is missing or not detected: check the BMC's event log "
    "(ipmitool sel list) and reseat; capture a new baseline if the build changed.",
    limits={"memory_pct": 5.0},
    source="aznhc: RAM within 5 % of the expected size",
)
def system(ctx: Context) -> list[Outcome]:
    """MemTotal within a tolerance, CPU model and thread count, NVMe controller count."""
    b = baseline_of(ctx)
    out: list[Outcome] = []
    if b.memory_bytes:
        have = ctx.memory.total_bytes
        pct = float(b.tolerances.get("memory_pct", ctx.limit("memory_pct")))
        if have is None:
            out.append(unknown("host", "MemTotal unreadable"))
        elif abs(have - b.memory_bytes) > b.memory_bytes * pct / 100:
            out.append(
                failed(
                    "host",
                    f"memory {have / 2**30:.1f} GiB, baseline {b.memory_bytes / 2**30:.1f} GiB "
                    f"(tolerance {pct:g} %)",
                )
            )
        else:
            out.append(passed("host", f"memory {have / 2**30:.1f} GiB within {pct:g} %"))
    cpu = ctx.cpu
    if b.cpu_model and cpu.model_name and cpu.model_name != b.cpu_model:
        out.append(failed("host", f"CPU {cpu.model_name}, baseline {b.cpu_model}"))
    if b.cpu_threads and cpu.threads is not None and cpu.threads != b.cpu_threads:
        out.append(warned("host", f"{cpu.threads} CPU threads, baseline {b.cpu_threads}"))
    if b.nvme_count is not None:
        n = len(ctx.storage.nvme)
        if n < b.nvme_count:
            out.append(failed("host", f"{n} NVMe controllers, baseline {b.nvme_count}"))
    return out or [passed("host", "memory, CPUs and NVMe as in the baseline")]
