"""``collect_tree(host)``: the topology from the PCI tree, read through the other facts.

Sources, each read once: the ``pci`` facts (sysfs, or ``lspci -vvv`` where a bundle has
no sysfs: its bridges' bus ranges give the tree), each device's ``sys/bus/pci/devices``
link target (its chain of bridges up to the host bridge), the ``gpu`` facts (nvidia-smi
index, name, NVLinks up), the ``infiniband`` facts (RDMA devices, their PCI function,
ports), the RoCE GID tables (``gids.py``), the ``numa`` facts, /proc/cpuinfo (what
NCCL's ``<cpu>`` says) and /proc/modules (nvidia-peermem). NV cells come from the
NVSwitches the tree shows; where it shows none, from ``nvidia-smi topo -m`` if recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from dolmen.facts import infiniband, numa, pci
from dolmen.facts.pci import PciDevice
from dolmen.facts.topology.gids import read_roce_v2_index
from dolmen.facts.topology.tree import all_paths, chain_from_link, matrix_links, nvswitch_links
from dolmen.facts.topology.tree_model import (
    GPU,
    NIC,
    NVSWITCH,
    Bridge,
    CpuId,
    Device,
    HostTopology,
    NicPort,
)
from dolmen.frozen.regex import pattern
from dolmen.host import Host
from dolmen.values.busid import BusId
from dolmen.values.cpulist import CpuList

_MAX_DEPTH = 32  # PCIe allows far fewer nested bridges; a cycle in hostile input stops here
_DIGITS = pattern(r"(\d+)")
_ARCH = {"GenuineIntel": "x86_64", "AuthenticAMD": "x86_64", "HygonGenuine": "x86_64"}


def collect_tree(host: Host, *, inventory: bool = True) -> HostTopology:
    """Read and build the topology of ``host`` (module docstring). ``inventory=False``
    skips the GPU inventory (names, NVLinks): the GPUs are then numbered in PCI order,
    which is NVML's own (what a launch's NCCL variables need, at a tenth of the cost)."""
    facts = pci.collect(host, aer=False)
    if not facts.devices:
        why = facts.unread.get("devices", "missing (no PCI devices)")
        return HostTopology(unread={"devices": why})
    unread: dict[str, str] = {}
    by = facts.by_bdf()
    source = "lspci -vvv" if all(d.source == "lspci" for d in facts.devices) else "sysfs"
    gpus = _gpus(host, facts.devices, unread, inventory)
    nics = _nics(host, by, unread)
    switches = [
        _device(host, by, d, f"NVS{i}", NVSWITCH)
        for i, d in enumerate(d for d in facts.devices if _is_nvswitch(d))
    ]
    devices = tuple([*gpus, *nics, *switches])
    nodes = numa.collect(host)
    cpus = {n.id: CpuList(n.cpus) for n in nodes.nodes if n.cpus is not None}
    nvlink, links = _nvlinks(host, gpus, bool(switches), unread)
    paths, unplaced = all_paths(devices, links, single_node=len(cpus) == 1)
    unread.update(unplaced)
    bridges = {b: _bridge(by.get(b), b) for d in devices for b in d.chain}
    return HostTopology(
        devices=devices,
        bridges=bridges,
        numa=cpus,
        cpu=parse_cpuid(host.read_opt("proc/cpuinfo") or ""),
        paths=paths,
        nvlink=nvlink,
        source=source,
        gdr=_peermem(host),
        unread=unread,
    )


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


def _is_gpu(d: PciDevice) -> bool:
    return d.vendor_id == "10de" and (d.class_id or "").startswith("03")


def _is_nvswitch(d: PciDevice) -> bool:
    return d.vendor_id == "10de" and d.class_id == "0680"


def _gpus(
    host: Host, devices: tuple[PciDevice, ...], unread: dict[str, str], inventory: bool
) -> list[Device]:
    """The NVIDIA display/3D functions, labelled by the driver's index (PCI order without
    an inventory: NVML enumerates by bus id)."""
    found = [d for d in devices if _is_gpu(d)]
    inv = None
    if inventory and found:
        from dolmen.facts import gpu as gpu_facts  # the inventory only where it is asked for

        inv = gpu_facts.collect(host)
    known = {g.pci_address: g for g in inv.inventory.gpus if g.pci_address} if inv else {}
    if found and inventory and not known:
        unread["gpu.index"] = "not in this bundle: GPU inventory (indices follow PCI order)"
    by = {d.bdf: d for d in devices}
    out = []
    for order, d in enumerate(sorted(found, key=lambda d: d.bdf)):
        g = known.get(d.bdf)
        index = g.position if g is not None else order
        links = inv.nvlinks.get(g.subject) if g is not None and inv is not None else None
        out.append(
            replace(
                _device(host, by, d, f"GPU{index}", GPU),
                name=g.name if g else None,
                index=index,
                nvlinks=sum(1 for x in links if x.state == "up") if links is not None else None,
            )
        )
    return sorted(out, key=lambda g: g.index or 0)


def _nics(host: Host, by: Mapping[str, PciDevice], unread: dict[str, str]) -> list[Device]:
    """RDMA devices (sys/class/infiniband, ibstat), in name order, each at its PCI
    function; without any, the Mellanox/NVIDIA network functions of the PCI tree."""
    # sysfs without the error counters; the tools' listings where a bundle has no sysfs
    found = infiniband.read_sysfs(host, {}, counters=False) or infiniband.collect(host).ports
    names = sorted({p.device for p in found}, key=_natural)
    out: list[Device] = []
    for i, name in enumerate(names):
        ports = [p for p in found if p.device == name]
        bdf = next((p.pci_bdf for p in ports if p.pci_bdf), None)
        dev = by.get(bdf or "")
        label = f"NIC{i}"
        if dev is None:
            unread[f"{label}.path"] = f"missing (no PCI function for {name} in this bundle)"
        nic_ports = tuple(
            NicPort(
                p.port,
                p.link_layer,
                p.state,
                p.rate_gbps,
                *read_roce_v2_index(host, name, p.port, p.link_layer),
            )
            for p in ports
        )
        base = (
            _device(host, by, dev, label, NIC)
            if dev is not None
            else Device(label, NIC, bdf or "", None, (), None, None)
        )
        out.append(replace(base, name=name, node_guid=ports[0].node_guid, ports=nic_ports))
    if out:
        return out
    functions = sorted(
        (d for d in by.values() if d.vendor_id == "15b3" and (d.class_id or "").startswith("02")),
        key=lambda d: d.bdf,
    )
    if functions:
        unread["nic.names"] = "not in this bundle: sys/class/infiniband (NICs by PCI function)"
    return [_device(host, by, d, f"NIC{i}", NIC) for i, d in enumerate(functions)]


def _natural(name: str) -> list[str | int]:
    """mlx5_2 before mlx5_10."""
    return [int(p) if p.isdigit() else p for p in _DIGITS.split(name)]


def _device(host: Host, by: Mapping[str, PciDevice], d: PciDevice, label: str, kind: str) -> Device:
    root, chain = _place(host, by, d)
    link = d.max_link or d.current_link
    return Device(
        label=label,
        kind=kind,
        bdf=d.bdf,
        root=root,
        chain=chain,
        numa_node=d.numa_node if d.numa_node is not None and d.numa_node >= 0 else None,
        cpus=CpuList(d.local_cpus) if d.local_cpus is not None else None,
        class_id=d.class_id,
        vendor_id=d.vendor_id,
        device_id=d.device_id,
        subsystem_vendor_id=d.subsystem_vendor_id,
        subsystem_device_id=d.subsystem_device_id,
        link_speed_gts=link.speed_gts if link else None,
        link_width=link.width if link else None,
    )


def _place(
    host: Host, by: Mapping[str, PciDevice], d: PciDevice
) -> tuple[str | None, tuple[str, ...]]:
    """The host bridge and bridges above ``d``: from its sysfs link target, else (lspci)
    by walking the parents the bus ranges gave."""
    if d.source != "lspci":  # no link in the tree: no place, never one guessed from the bus
        target = host.readlink(f"{pci.DEVICES}/{d.bdf}")
        return chain_from_link(target) if target else (None, ())
    chain: list[str] = []
    parent = d.parent
    while parent is not None and len(chain) < _MAX_DEPTH and parent not in chain:
        chain.insert(0, parent)
        up = by.get(parent)
        parent = up.parent if up is not None else None
    top = BusId.parse(chain[0] if chain else d.bdf)
    if top is None:
        return None, ()
    domain, bus = top.sysfs.split(":")[:2]
    return f"pci{domain}:{bus}", tuple(chain)


def _bridge(d: PciDevice | None, bdf: str) -> Bridge:
    if d is None:
        return Bridge(bdf)
    link = d.max_link or d.current_link
    return Bridge(
        bdf,
        d.class_id,
        d.vendor_id,
        d.device_id,
        d.subsystem_vendor_id,
        d.subsystem_device_id,
        link.speed_gts if link else None,
        link.width if link else None,
    )


def _nvlinks(
    host: Host, gpus: list[Device], switches: bool, unread: dict[str, str]
) -> tuple[str, dict[tuple[str, str], int]]:
    """Where the NV cells come from and the NVLink pairs (see module docstring)."""
    if not any(g.nvlinks for g in gpus):
        return "", {}
    if switches:
        return "nvswitch", nvswitch_links(gpus)
    from dolmen.facts import topology

    matrix = topology.collect(host).matrix
    if matrix is None:
        unread["nvlink"] = (
            "not in this bundle: NVLink peers (no NVSwitch in the PCI tree, no nvidia-smi topo -m)"
        )
        return "", {}
    labels = {g.index: g.label for g in gpus if g.index is not None}
    return "nvidia-smi topo -m", matrix_links(matrix, labels)


def _peermem(host: Host) -> bool | None:
    """Whether nvidia-peermem (GPUDirect RDMA with verbs) is loaded; None unread."""
    text = host.read_opt("proc/modules")
    if text is None:
        return None
    return any(line.split(" ", 1)[0] == "nvidia_peermem" for line in text.splitlines())
