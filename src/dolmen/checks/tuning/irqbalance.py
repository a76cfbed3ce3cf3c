"""``tuning.irq.balance``: on a multi-node host, irqbalance does not undo local IRQ placement."""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, warned
from dolmen.checks.tuning import not_read, single_node


@check(
    "tuning.irq.balance",
    title="The irqbalance daemon does not move NIC and NVMe interrupts off their NUMA node",
    level=Level.STANDARD,
    needs=("tuning", "numa"),
    when=("nvidia_gpu",),
    remedy=(
        "Stop irqbalance and pin device interrupts to their node (dolmen tune apply "
        "ai-training-multinode, as mlnx_tune HIGH_THROUGHPUT does), or ban those IRQs."
    ),
    source="Mellanox/mlnx-tools mlnx_tune HIGH_THROUGHPUT: stop irqbalance, IRQs to the local node",
    gating=False,
)
def irq_balance(ctx: Context) -> list[Outcome]:
    """Reads whether irqbalance runs and the number of NUMA nodes."""
    t, nodes = ctx.tuning, len(ctx.numa.nodes)
    if (moot := single_node(ctx.numa, "every core is local to every device")) is not None:
        return [moot]
    if t.irqbalance_running is None:
        return [not_read(t.unread, "irqbalance_running", "irqbalance")]
    if not t.irqbalance_running:
        return [passed("host", "irqbalance is not running: interrupt placement stays as set")]
    return [
        warned(
            "host",
            f"irqbalance is running on a {nodes}-node host: NIC and NVMe interrupts can land "
            "on the remote node and move under load",
            service=t.irqbalance_service,
        )
    ]
