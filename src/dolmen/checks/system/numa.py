"""NUMA affinity of GPUs and NICs on hosts with more than one NUMA node.

NCCL and the CUDA runtime pin a GPU's host threads and buffers to the node its PCI
device reports (``numa_node``); with -1 (the firmware's ACPI tables give no
proximity for the device) they cannot, and GPU-NIC pairs may cross the socket
interconnect. One node with CPUs: nothing to pin, nothing to check.
"""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, skipped, unknown, warned
from dolmen.facts.pci import is_gpu
from dolmen.values.busid import pci_subject


@check(
    "system.numa",
    title="GPUs and NICs report their NUMA node on multi-socket hosts",
    level=Level.QUICK,
    needs=("numa", "pci"),
    remedy=(
        "Enable the NUMA/proximity options of the BIOS (ACPI SRAT, 'NUMA nodes per socket'), or "
        "on a VM ask for a NUMA-aware size; until then pin jobs by hand (numactl, "
        "NCCL_TOPO_FILE)."
    ),
    source="Linux pci numa_node (-1: NUMA_NO_NODE); NCCL topology detection",
)
def numa(ctx: Context) -> list[Outcome]:
    """Reads the NUMA nodes with CPUs and ``numa_node`` of each GPU and network function."""
    nodes = ctx.numa.nodes
    if not nodes:
        why = ctx.numa.unread.get("nodes", "no NUMA node listed")
        if why.startswith("not supported"):
            return [skipped("host", f"kernel without NUMA: {why}")]
        return [unknown("host", f"NUMA nodes unreadable: {why}")]
    with_cpus = [n.id for n in nodes if n.cpus]
    if len(with_cpus) < 2:
        return [skipped("host", "one NUMA node with CPUs: affinity does not matter")]
    devices = [d for d in ctx.pci.devices if is_gpu(d) or (d.class_id or "").startswith("02")]
    if not devices:
        return [skipped("host", "no GPU or NIC on the PCI bus")]
    out: list[Outcome] = []
    placed = 0
    for d in devices:
        subject = pci_subject(d.bdf, gpu=is_gpu(d))
        kind = "GPU" if is_gpu(d) else "NIC"
        if d.numa_node is None:
            why = ctx.pci.unread.get(f"{d.bdf}.numa_node", "not reported")
            out.append(unknown(subject, f"{kind} NUMA node unreadable: {why}", kind=kind))
        elif d.numa_node < 0:
            out.append(
                warned(
                    subject,
                    f"{kind} has no NUMA node (-1) on a host with {len(with_cpus)} nodes",
                    kind=kind,
                    driver=d.driver,
                )
            )
        else:
            placed += 1
    if placed:
        msg = f"{placed} GPU/NIC function(s) report a NUMA node ({len(with_cpus)} nodes)"
        out.append(passed("host", msg, nodes=with_cpus))
    return out
