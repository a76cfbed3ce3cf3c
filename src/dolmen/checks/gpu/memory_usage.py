"""GPU memory held while nothing runs on the GPU (what a job left behind).

Memory in use is a fault only on an idle GPU: held with no process listed and
0% utilisation it is a leaked or stuck context (a crashed job's, a zombie's).
With the GPU busy a job is running, whether or not its processes show (nvidia-smi
in a container lists none of another PID namespace's), so the check skips; with
utilisation unread it cannot tell the two apart and says so.
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.gpu.gpus import is_skippable, per_gpu, reason_of, unread
from dolmen.checks.model import Level, Outcome, check, passed, skipped, unknown, warned
from dolmen.host.gpu import Gpu


@check(
    "gpu.memory.idle_usage",
    title="An idle GPU (no process, 0% utilisation) holds no more memory than the post-job limit",
    level=Level.STANDARD,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=(
        "Look for leftover processes or contexts (nvidia-smi --query-compute-apps=pid,name "
        "--format=csv; fuser -v /dev/nvidia*); stop them, or reset the GPU "
        "(nvidia-smi -r -i <bus id>)."
    ),
    limits={"max_used_mib": 15},
    source="GCM epilog gpu_mem_usage threshold 15 MiB; utilisation tells a running job from a "
    "leftover context",
)
def idle_usage(ctx: Context) -> list[Outcome]:
    """Reads ``memory.used_mib``, the process count and ``utilization.gpu`` per GPU."""
    limit = int(ctx.limit("max_used_mib"))

    def body(gpu: Gpu) -> Outcome:
        used, procs, busy = gpu.memory.used_mib, gpu.processes, gpu.utilization.gpu
        if used is None:
            return unread(gpu, "memory.used_mib", "used memory")
        ev: dict[str, Any] = {
            "used_mib": used,
            "processes": procs,
            "utilization_pct": busy,
            "limit_mib": limit,
        }
        if procs:
            return skipped(gpu.subject, f"in use by {procs} processes: not idle", **ev)
        if gpu.mig.current:
            # MIG instances hold their own memory (the real A100 capture: 50 MiB with 4
            # instances and no process): the whole-GPU figure says nothing about leftovers.
            return skipped(gpu.subject, "MIG mode: memory belongs to the instances", **ev)
        if busy:
            return skipped(
                gpu.subject,
                f"{busy}% utilised with {used} MiB used: a job is running (its processes may "
                "be in another PID namespace), not idle",
                **ev,
            )
        if used <= limit:
            listed = "no process" if procs == 0 else "processes unread"
            return passed(gpu.subject, f"{used} MiB used, {listed}", **ev)
        if procs is None:
            return unread(gpu, "processes", "process list")
        why = reason_of(gpu, ("utilization.gpu",)) if busy is None else ""
        if busy is None and not is_skippable(why):
            return unknown(
                gpu.subject,
                f"{used} MiB used with no process listed, but utilisation could not be read "
                f"({why}): a running job cannot be told from a leftover context",
                reason=why,
                **ev,
            )
        # Without utilisation on this board (not supported), no process is the evidence.
        load = "0% utilisation" if busy == 0 else "utilisation not reported by this board"
        return warned(
            gpu.subject,
            f"{used} MiB held with no process and {load}: a leaked or stuck context",
            **ev,
        )

    return per_gpu(ctx, body)
