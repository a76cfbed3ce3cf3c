"""``collect_tree(host)``: the topology from the PCI tree, read through the other facts.

Sources, each read once: the ``pci`` facts (sysfs, or ``lspci -vvv`` where a bundle has
no sysfs: its bridges' bus ranges give the tree), each device's ``sys/bus/pci/devices``
link target (its chain of bridges up to the host bridge), the ``gpu`` facts (nvidia-smi
index, name, NVLinks up), the ``infiniband`` facts (RDMA devices, their PCI function,
ports), the RoCE GID tables (``gids.py``), the ``numa`` facts, /proc/cpuinfo (what
NCCL's ``<cpu>`` says) and /proc/modules (nvidia-peermem). NV cells come from the
NVSwitches the tree shows; where it shows none, from ``nvidia-smi topo -m`` if recorded.
The tree itself is built by ``build.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from dolmen.facts import infiniband, numa, pci
from dolmen.facts.pci import is_gpu
from dolmen.facts.topology.build import Sources, build_tree, no_pci
from dolmen.facts.topology.model import TopoMatrix
from dolmen.facts.topology.tree_model import CpuId, HostTopology
from dolmen.host import Host

_ARCH = {"GenuineIntel": "x86_64", "AuthenticAMD": "x86_64", "HygonGenuine": "x86_64"}


def collect_tree(
    host: Host,
    *,
    inventory: bool = True,
    matrix: Callable[[], TopoMatrix | None] | None = None,
) -> HostTopology:
    """Read and build the topology of ``host`` (module docstring). ``inventory=False``
    skips the GPU inventory (names, NVLinks): the GPUs are then numbered in PCI order,
    which is NVML's own (what a launch's NCCL variables need, at a tenth of the cost).
    ``matrix``: how to read ``nvidia-smi topo -m`` where the NV cells need it, for a
    caller that reads it anyway (by default, ``topology.collect``)."""
    facts = pci.collect(host, aer=False)
    if not facts.devices:
        return no_pci(facts)
    inv = None
    if inventory and any(is_gpu(d) for d in facts.devices):
        from dolmen.facts import gpu as gpu_facts  # the inventory only where it is asked for

        inv = gpu_facts.collect(host)
    # sysfs without the error counters; the tools' listings where a bundle has no sysfs
    ports = infiniband.read_sysfs(host, {}, counters=False) or infiniband.collect(host).ports

    def read_matrix() -> TopoMatrix | None:
        from dolmen.facts import topology

        return topology.collect(host).matrix

    src = Sources(facts, inv, ports, numa.collect(host), matrix or read_matrix)
    tree = build_tree(host, src, gids=True)
    cpu = parse_cpuid(host.read_opt("proc/cpuinfo") or "")
    return replace(tree, cpu=cpu, gdr=_peermem(host))


def parse_cpuid(text: str) -> CpuId:
    """The first processor block of /proc/cpuinfo: vendor, family, model, architecture."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    vendor = fields.get("vendor_id")
    arch = _ARCH.get(vendor or "")
    if arch is None and "CPU implementer" in fields:
        arch = "arm64"
    elif arch is None and fields.get("cpu", "").startswith("POWER"):
        arch = "ppc64"
    family, model = fields.get("cpu family", ""), fields.get("model", "")
    return CpuId(
        arch=arch,
        vendor=vendor,
        family=int(family) if family.isdigit() else None,
        model=int(model) if model.isdigit() else None,
    )


def _peermem(host: Host) -> bool | None:
    """Whether nvidia-peermem (GPUDirect RDMA with verbs) is loaded; None unread."""
    text = host.read_opt("proc/modules")
    if text is None:
        return None
    return any(line.split(" ", 1)[0] == "nvidia_peermem" for line in text.splitlines())
