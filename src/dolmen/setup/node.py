"""This node's shape for the scheduler, from the facts validate reads (cpu, memory, gpu,
pci, topology) and /proc/cpuinfo's core ids; slurm/conf_gen.py turns it into text."""

from __future__ import annotations

from dolmen.facts.gpu import GpuFacts
from dolmen.facts.pci import PciFacts
from dolmen.facts.reading import read_text
from dolmen.facts.topology import TopologyFacts
from dolmen.facts.topology.model import gpu_index
from dolmen.host import Host
from dolmen.kb import prebuilt
from dolmen.slurm.conf_gen import NodeGpu, NodeShape, cores_of, gres_type, parse_core_map, shape
from dolmen.values.busid import BusId


def node_shape(host: Host, name: str) -> NodeShape:
    """The shape of ``host`` under the Slurm node name ``name`` (see conf_gen)."""
    from dolmen.facts import cpu, gpu, memory, pci, topology

    c, m, g = cpu.collect(host), memory.collect(host), gpu.collect(host)
    notes: list[str] = []
    core_map = parse_core_map(read_text(host, "proc/cpuinfo").text or "")
    if not core_map:
        notes.append("Cores= left out: proc/cpuinfo has no physical id / core id")
    # GPU affinity only where there are GPUs: PCI facts without sysfs link files run
    # `lspci -vvv` (20 ms, most of a CPU node's line)
    by_index, by_bus = _affinity(pci.collect(host), topology.collect(host)) if g.gpus else ({}, {})
    gpus: list[NodeGpu] = []
    missing = gpu_missing(g)
    for x in g.gpus:
        if not x.name:  # a GPU that fell off the bus: "gpu:gpu:1" would be a guessed type
            missing.append(f"GPU {x.position} ({x.bus_id}): its product name was not read")
        model = prebuilt.gpus().match(x.name) if x.name else None
        bus = BusId.parse(x.bus_id)
        cpus = (by_bus.get(bus) if bus else None) or by_index.get(x.position)
        cores = cores_of(cpus, core_map) if cpus is not None and core_map else None
        if cpus is None:
            notes.append(f"GPU {x.position}: Cores= left out: no CPU affinity was read")
        elif cores is None and core_map:
            notes.append(f"GPU {x.position}: Cores= left out: a CPU of it is not in cpuinfo")
        kind = gres_type(x.name, model.id if model else None)
        gpus.append(NodeGpu(x.index, kind, bus.sysfs if bus else x.bus_id, cores, cpus))
    return shape(
        name,
        sockets=c.sockets,
        cores=c.cores,
        threads=c.threads,
        memory_bytes=m.total_bytes,
        gpus=gpus,
        unread={**c.unread, "total_bytes": m.unread.get("total_bytes", "not read")},
        notes=notes,
        gpu_missing=missing,
    )


def gpu_missing(g: GpuFacts) -> list[str]:
    """Why the GPU count is not known: the driver listed none although it erred with GPUs
    in PCI (or PCI unread), or PCI shows GPUs it did not list."""
    if g.gpus:
        lost = g.pci_gpus_missing_from_driver
        return (
            [f"GPUs {', '.join(lost)} are in PCI but the driver did not list them"] if lost else []
        )
    if g.error and (g.pci_gpus or "pci_gpus" in g.unread):
        return [f"the driver did not list the GPUs ({g.error})"]
    return []


def _affinity(
    pci: PciFacts, topo: TopologyFacts
) -> tuple[dict[int, tuple[int, ...]], dict[BusId, tuple[int, ...]]]:
    """GPU -> CPUs: nvidia-smi topo -m's CPU Affinity by GPU index (the enumeration
    position), and sysfs local_cpulist by bus id, preferred (the two agree on a sane host;
    checks.interconnect.topology warns when they do not)."""
    by_index: dict[int, tuple[int, ...]] = {}
    if topo.matrix is not None:
        for label, aff in topo.matrix.affinity.items():
            i = gpu_index(label)
            if i is not None and aff.cpus is not None:
                by_index[i] = tuple(aff.cpus)
    by_bus: dict[BusId, tuple[int, ...]] = {}
    for dev in pci.devices:
        bus = BusId.parse(dev.bdf)
        if bus is not None and dev.local_cpus is not None:
            by_bus[bus] = tuple(dev.local_cpus)
    return by_index, by_bus
