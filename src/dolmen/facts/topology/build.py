"""``build_tree``: the host topology from facts already read (``pci``, ``gpu``,
``infiniband``, ``numa``, ``nvidia-smi topo -m``), placing each device in the PCI tree.

``collect_tree`` (sysfs.py) reads those facts itself; a validate run hands over the ones
its checks loaded (``of_run.py``). Either way this reads only each device's
``sys/bus/pci/devices`` link target (its chain of bridges up to the host bridge; lspci's
bus ranges where a bundle has no sysfs) and, when asked, the RoCE GID tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

from dolmen.facts import pci
from dolmen.facts.pci import PciDevice, PciFacts, is_gpu
from dolmen.facts.topology.gids import read_roce_v2_index
from dolmen.facts.topology.tree import all_paths, chain_from_link, matrix_links, nvswitch_links
from dolmen.facts.topology.tree_model import (
    GPU,
    NIC,
    NVSWITCH,
    Bridge,
    Device,
    HostTopology,
    NicPort,
)
from dolmen.frozen.regex import pattern
from dolmen.host import Host
from dolmen.values.busid import BusId
from dolmen.values.cpulist import CpuList

if TYPE_CHECKING:
    from dolmen.facts.gpu import GpuFacts
    from dolmen.facts.infiniband import IbPort
    from dolmen.facts.numa import NumaFacts
    from dolmen.facts.topology.model import TopoMatrix

_MAX_DEPTH = 32  # PCIe allows far fewer nested bridges; a cycle in hostile input stops here
_DIGITS = pattern(r"(\d+)")


class Sources(NamedTuple):
    """What the tree is built from, each read by its own collector: the PCI functions, the
    GPU inventory (None: none asked for, the GPUs are numbered in PCI order), the RDMA
    ports, the NUMA nodes, and ``nvidia-smi topo -m`` (called only where the NV cells
    need it: no NVSwitch in the tree)."""

    pci: PciFacts
    gpu: GpuFacts | None
    ports: Sequence[IbPort]
    numa: NumaFacts
    matrix: Callable[[], TopoMatrix | None]


def build_tree(host: Host, src: Sources, *, gids: bool = False) -> HostTopology:
    """The topology from facts already read: reads each device's sysfs link target and,
    with ``gids``, the GID tables of Ethernet ports (NCCL_IB_GID_INDEX; without, their
    ``roce_v2_gid`` is None). ``cpu`` and ``gdr`` are left unread (``collect_tree`` reads
    them)."""
    if not src.pci.devices:
        return no_pci(src.pci)
    unread: dict[str, str] = {}
    by = src.pci.by_bdf()
    devs = src.pci.devices
    source = "lspci -vvv" if all(d.source == "lspci" for d in devs) else "sysfs"
    gpus = _gpus(host, devs, src.gpu, unread)
    nics = _nics(host, by, src.ports, unread, gids)
    switches = [
        _device(host, by, d, f"NVS{i}", NVSWITCH)
        for i, d in enumerate(d for d in devs if _is_nvswitch(d))
    ]
    devices = tuple([*gpus, *nics, *switches])
    cpus = {n.id: CpuList(n.cpus) for n in src.numa.nodes if n.cpus is not None}
    nvlink, links = _nvlinks(gpus, bool(switches), src.matrix, unread)
    paths, unplaced = all_paths(devices, links, single_node=len(cpus) == 1)
    unread.update(unplaced)
    bridges = {b: _bridge(by.get(b), b) for d in devices for b in d.chain}
    return HostTopology(
        devices=devices,
        bridges=bridges,
        numa=cpus,
        paths=paths,
        nvlink=nvlink,
        source=source,
        unread=unread,
    )


def no_pci(facts: PciFacts) -> HostTopology:
    """The topology of a host whose PCI functions could not be read: the reason alone."""
    return HostTopology(unread={"devices": facts.unread.get("devices", "missing (no PCI devices)")})


def _is_nvswitch(d: PciDevice) -> bool:
    return d.vendor_id == "10de" and d.class_id == "0680"


def _gpus(
    host: Host, devices: tuple[PciDevice, ...], inv: GpuFacts | None, unread: dict[str, str]
) -> list[Device]:
    """The NVIDIA display/3D functions, labelled by the driver's index (PCI order without
    an inventory: NVML enumerates by bus id)."""
    found = [d for d in devices if is_gpu(d)]
    known = {g.pci_address: g for g in inv.inventory.gpus if g.pci_address} if inv else {}
    if found and inv is not None and not known:
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


def _nics(
    host: Host,
    by: Mapping[str, PciDevice],
    found: Sequence[IbPort],
    unread: dict[str, str],
    gids: bool,
) -> list[Device]:
    """RDMA devices (sys/class/infiniband, ibstat), in name order, each at its PCI
    function; without any, the Mellanox/NVIDIA network functions of the PCI tree."""
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
                *(read_roce_v2_index(host, name, p.port, p.link_layer) if gids else (None, "")),
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
    gpus: list[Device],
    switches: bool,
    read_matrix: Callable[[], TopoMatrix | None],
    unread: dict[str, str],
) -> tuple[str, dict[tuple[str, str], int]]:
    """Where the NV cells come from and the NVLink pairs (see module docstring)."""
    if not any(g.nvlinks for g in gpus):
        return "", {}
    if switches:
        return "nvswitch", nvswitch_links(gpus)
    matrix = read_matrix()
    if matrix is None:
        unread["nvlink"] = (
            "not in this bundle: NVLink peers (no NVSwitch in the PCI tree, no nvidia-smi topo -m)"
        )
        return "", {}
    labels = {g.index: g.label for g in gpus if g.index is not None}
    return "nvidia-smi topo -m", matrix_links(matrix, labels)
