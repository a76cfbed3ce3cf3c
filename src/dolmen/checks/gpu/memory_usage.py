"""GPU memory held while no process uses the GPU (what a job left behind)."""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.gpu.gpus import per_gpu, unread
from dolmen.checks.model import Level, Outcome, check, passed, skipped, warned
from dolmen.host.gpu import Gpu


@check(
    "gpu.memory.idle_usage",
    title="A GPU without processes holds no more memory than the post-job limit",
    level=Level.STANDARD,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=(
        "Look for leftover processes or contexts (nvidia-smi --query-compute-apps=pid,name "
        "--format=csv; fuser -v /dev/nvidia*); stop them, or reset the GPU "
        "(nvidia-smi -r -i <bus id>)."
    ),
    limits={"max_used_mib": 15},
    source="GCM epilog gpu_mem_usage threshold 15 MiB",
)
def idle_usage(ctx: Context) -> list[Outcome]:
    """Reads ``memory.used_mib`` and the process count per GPU."""
    limit = int(ctx.limit("max_used_mib"))

    def body(gpu: Gpu) -> Outcome:
        used, procs = gpu.memory.used_mib, gpu.processes
        if used is None:
            return unread(gpu, "memory.used_mib", "used memory")
        if procs is None:
            return unread(gpu, "processes", "process list")
        ev: dict[str, Any] = {"used_mib": used, "processes": procs, "limit_mib": limit}
        if procs:
            return skipped(gpu.subject, f"in use by {procs} processes: not idle", **ev)
        if gpu.mig.current:
            # MIG instances hold their own memory (the real A100 capture: 50 MiB with 4
            # instances and no process): the whole-GPU figure says nothing about leftovers.
            return skipped(gpu.subject, "MIG mode: memory belongs to the instances", **ev)
        if used > limit:
            return warned(gpu.subject, f"{used} MiB used with no process on the GPU", **ev)
        return passed(gpu.subject, f"{used} MiB used, no process", **ev)

    return per_gpu(ctx, body)
