"""``tuning.numa_balancing``: automatic NUMA balancing, off on DGX OS for GPU work.

A trade-off, said as one: NVIDIA disables it for GPU training (its page scans stall
the CPU threads that feed the GPUs), while TuneD removed the same setting from
throughput-performance after it cost up to 20% on some CPU-bound AMD loads.
"""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, warned
from dolmen.checks.tuning import not_read, single_node


@check(
    "tuning.numa_balancing",
    title="Automatic NUMA balancing is off on a multi-node GPU host",
    level=Level.STANDARD,
    needs=("tuning", "numa"),
    when=("nvidia_gpu",),
    remedy=(
        "For GPU training: sysctl kernel.numa_balancing=0 (dolmen tune apply ai-training). "
        "Keep it on if this host mostly runs CPU-bound work (tuned PR #283)."
    ),
    source=(
        "DGX OS nvidia-disable-numa-balancing, NVIDIA Grace guide; deepseek-ai/DeepEP#624 "
        "(task_numa_work stalls); redhat-performance/tuned PR #283 (up to 20% loss on AMD)"
    ),
    gating=False,
)
def numa_balancing(ctx: Context) -> list[Outcome]:
    """Reads ``numa_balancing`` and the number of NUMA nodes."""
    t, nodes = ctx.tuning, len(ctx.numa.nodes)
    if (moot := single_node(ctx.numa, "nothing to balance")) is not None:
        return [moot]
    if t.numa_balancing is None:
        return [not_read(t.unread, "numa_balancing", "kernel.numa_balancing")]
    if t.numa_balancing == 0:
        return [passed("host", f"NUMA balancing is off on this {nodes}-node host")]
    return [
        warned(
            "host",
            f"NUMA balancing is on ({t.numa_balancing}) on a {nodes}-node GPU host: its page "
            "scans can stall data-loader and communication threads",
            numa_balancing=t.numa_balancing,
            nodes=nodes,
        )
    ]
