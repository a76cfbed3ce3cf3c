"""The host topology built from the PCI tree: GPUs, NICs and NVSwitches where they sit.

Where ``model.TopoMatrix`` is what ``nvidia-smi topo -m`` printed, ``HostTopology`` is
what dolmen reads itself: each device's chain of PCIe bridges up to its host bridge
(``pci0000:15``), its NUMA node and local CPUs, its link, and, for NICs, the RDMA
device's ports (link layer, rate, the RoCE v2 GID index). ``paths`` holds the same
letter codes as the matrix (``PIX``, ``NODE``, ``NV18``...), computed by ``tree.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from dolmen.facts.topology.model import Path
from dolmen.frozen import frozen
from dolmen.values.cpulist import CpuList

GPU, NIC, NVSWITCH = "gpu", "nic", "nvswitch"


@frozen
class Bridge:
    """A PCIe bridge on some device's way up (a root port, a switch's up- or downstream
    port); None where the source did not show it (a bridge named only in a link target)."""

    bdf: str
    class_id: str | None = None  # 0604
    vendor_id: str | None = None
    device_id: str | None = None
    subsystem_vendor_id: str | None = None
    subsystem_device_id: str | None = None
    link_speed_gts: float | None = None  # the bridge's maximum link
    link_width: int | None = None


@frozen
class NicPort:
    """One port of an RDMA device: what NCCL_IB_HCA and NCCL_IB_GID_INDEX are made of."""

    port: int
    link_layer: str | None  # InfiniBand, Ethernet (RoCE)
    state: str | None  # ACTIVE, DOWN...
    rate_gbps: float | None
    roce_v2_gid: int | None = None  # the index of the RoCE v2 IPv4-mapped GID
    gid_note: str = ""  # why roce_v2_gid is None on an Ethernet port


@frozen
class Device:
    """A GPU, NIC or NVSwitch: where it sits in the PCI tree and what it is.

    ``chain`` is the bridges above it, top first (root port ... switch port); ``root``
    the host bridge (``pci0000:15``) its chain starts from; None where unknown.
    """

    label: str  # GPU0 (the nvidia-smi index), NIC0 (name order), NVS0
    kind: str  # GPU | NIC | NVSWITCH
    bdf: str  # 0000:19:00.0
    root: str | None
    chain: tuple[str, ...]
    numa_node: int | None  # None: the firmware gives none (-1) or it was not read
    cpus: CpuList | None  # local_cpulist
    name: str | None = None  # mlx5_0; the GPU's product name
    index: int | None = None  # GPUs: the nvidia-smi / NVML index
    class_id: str | None = None
    vendor_id: str | None = None
    device_id: str | None = None
    subsystem_vendor_id: str | None = None
    subsystem_device_id: str | None = None
    link_speed_gts: float | None = None  # maximum link
    link_width: int | None = None
    nvlinks: int | None = None  # GPUs: NVLinks up; None where not read
    node_guid: str | None = None  # NICs: 16 hex digits
    ports: tuple[NicPort, ...] = ()  # NICs


@frozen
class CpuId:
    """What NCCL's ``<cpu>`` element says of the processors (from /proc/cpuinfo)."""

    arch: str | None = None  # x86_64, arm64, ppc64
    vendor: str | None = None  # GenuineIntel, AuthenticAMD
    family: int | None = None
    model: int | None = None


@frozen
class HostTopology:
    """The GPUs, NICs and NVSwitches of a host with the path between every two.

    ``paths[a][b]`` is None-free: a pair no source places (a device without a PCI
    location) is absent, with the reason in ``unread``. ``nvlink`` says where NV cells
    came from (``nvswitch``: NVSwitches in the PCI tree and the GPUs' NVLinks up;
    ``nvidia-smi topo -m``; empty: none). ``source`` is ``sysfs`` or ``lspci -vvv``.
    """

    devices: tuple[Device, ...] = ()
    bridges: Mapping[str, Bridge] = field(default_factory=dict)
    numa: Mapping[int, CpuList] = field(default_factory=dict)
    cpu: CpuId = field(default_factory=CpuId)
    paths: Mapping[str, Mapping[str, Path]] = field(default_factory=dict)
    nvlink: str = ""
    source: str = "sysfs"
    gdr: bool | None = None  # nvidia-peermem loaded (GPUDirect RDMA); None unread
    unread: Mapping[str, str] = field(default_factory=dict)

    @property
    def gpus(self) -> tuple[Device, ...]:
        """The GPUs, in nvidia-smi index order."""
        return tuple(d for d in self.devices if d.kind == GPU)

    @property
    def nics(self) -> tuple[Device, ...]:
        """The NICs (RDMA devices), in name order."""
        return tuple(d for d in self.devices if d.kind == NIC)

    @property
    def nvswitches(self) -> tuple[Device, ...]:
        """NVSwitches the PCI tree shows (HGX boards expose them as PCI bridges)."""
        return tuple(d for d in self.devices if d.kind == NVSWITCH)

    def path(self, a: str, b: str) -> Path | None:
        """The path between two labels, or None when it could not be placed."""
        return self.paths.get(a, {}).get(b)

    def by_label(self) -> dict[str, Device]:
        """Devices keyed by label."""
        return {d.label: d for d in self.devices}

    def closest_nics(self, gpu: str) -> tuple[str, ...]:
        """The NICs nearest to a GPU (every one at the best path), in NIC order."""
        placed = [(p, n.label) for n in self.nics if (p := self.path(gpu, n.label)) is not None]
        if not placed:
            return ()
        best = min(p.kind for p, _ in placed)
        return tuple(label for p, label in placed if p.kind is best)
