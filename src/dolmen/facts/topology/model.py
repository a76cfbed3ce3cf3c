"""The topology model: the path between two devices, per-GPU affinity, the matrix, the facts.

``nvidia-smi topo -m`` prints one letter code per device pair; its legend (printed
under every matrix) defines them, from the closest to the farthest:

- ``X``: the device itself;
- ``NV#``: a bonded set of # NVLinks (NV18: all 18 links of an H100 SXM through
  the NVSwitches);
- ``PIX``: at most one PCIe bridge (the same PCIe switch);
- ``PXB``: several PCIe bridges, without the host bridge;
- ``PHB``: through a PCIe host bridge (typically the CPU);
- ``NODE``: through the interconnect between host bridges of one NUMA node;
- ``SYS``: through the SMP interconnect between NUMA nodes (QPI/UPI, xGMI).

Drivers before the ``SYS``/``NODE`` split (about 2017) printed ``SOC`` for a
socket-level link; it is read as ``SYS``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import field

from dolmen.frozen import frozen
from dolmen.frozen.regex import pattern
from dolmen.values.cpulist import CpuList


class PathKind(enum.Enum):
    """How two devices are connected, ordered by closeness: ``X < NV < PIX < ... < SYS``."""

    X = "X"
    NV = "NV"
    PIX = "PIX"
    PXB = "PXB"
    PHB = "PHB"
    NODE = "NODE"
    SYS = "SYS"

    @property
    def rank(self) -> int:
        """0 for the device itself, 6 for a path across NUMA nodes."""
        return _ORDER.index(self)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, PathKind):
            return NotImplemented
        return self.rank < other.rank

    def __le__(self, other: object) -> bool:
        if not isinstance(other, PathKind):
            return NotImplemented
        return self.rank <= other.rank


_ORDER = tuple(PathKind)

# Paths that leave the PCIe switch: GPUDirect RDMA between a GPU and a NIC this far apart
# crosses the CPU's root complex (NCCL's default NCCL_NET_GDR_LEVEL stops at PXB).
THROUGH_CPU = frozenset({PathKind.PHB, PathKind.NODE, PathKind.SYS})


@frozen
class Path:
    """One cell of the matrix: its kind and, for ``NV#``, the number of bonded links."""

    kind: PathKind
    links: int = 0  # NV18 -> 18; 0 for every other kind

    def __str__(self) -> str:
        return f"NV{self.links}" if self.kind is PathKind.NV else self.kind.value


@frozen
class GpuAffinity:
    """The affinity columns of one GPU row; None where the cell is ``N/A``, empty or unread
    (the reason is in the facts' ``unread`` under ``<label>.<field>``)."""

    cpus: CpuList | None  # "CPU Affinity": 0-47,96-143
    numa_node: int | None  # "NUMA Affinity"
    gpu_numa_id: int | None = None  # "GPU NUMA ID": the GPU memory's own node (Grace Hopper)


@frozen
class TopoMatrix:
    """What one ``nvidia-smi topo -m`` printed.

    ``devices`` are the column labels in their order (``GPU0``.., then ``NIC0``.. or, from
    older drivers, ``mlx5_0``..); ``paths[row][column]`` the cells that were read;
    ``problems`` what could not be (a truncated paste, a mangled row), one line each.
    """

    devices: tuple[str, ...]
    paths: Mapping[str, Mapping[str, Path]] = field(default_factory=dict)
    affinity: Mapping[str, GpuAffinity] = field(default_factory=dict)
    nic_names: Mapping[str, str] = field(default_factory=dict)  # NIC0 -> mlx5_0 (NIC Legend)
    problems: tuple[str, ...] = ()

    @property
    def gpus(self) -> tuple[str, ...]:
        """The GPU labels, ``GPU0``.. (the nvidia-smi index)."""
        return tuple(d for d in self.devices if is_gpu_label(d))

    @property
    def nics(self) -> tuple[str, ...]:
        """Every other column: the NICs (``NIC0``, ``mlx5_0``)."""
        return tuple(d for d in self.devices if not is_gpu_label(d))

    def path(self, a: str, b: str) -> Path | None:
        """The path between two devices, from either one's row; None when neither was read."""
        return self.paths.get(a, {}).get(b) or self.paths.get(b, {}).get(a)

    def nic_name(self, label: str) -> str:
        """``NIC0`` as the NIC Legend names it (``mlx5_0``), else the label itself."""
        return self.nic_names.get(label, label)


@frozen
class TopologyFacts:
    """``nvidia-smi topo -m``. ``matrix`` is None with the reason in ``unread["matrix"]``;
    other keys are ``<GPU label>.cpus``, ``<GPU label>.numa_node``, ``<GPU label>.gpu_numa_id``."""

    matrix: TopoMatrix | None = None
    unread: Mapping[str, str] = field(default_factory=dict)


_GPU_LABEL = pattern(r"GPU([0-9]{1,4})")


def is_gpu_label(label: str) -> bool:
    """``GPU0``..``GPU<n>``: a GPU column or row of the matrix."""
    return _GPU_LABEL.fullmatch(label) is not None


def gpu_index(label: str) -> int | None:
    """``GPU3`` -> 3, the nvidia-smi index (the driver's enumeration order); else None."""
    m = _GPU_LABEL.fullmatch(label)
    return int(m.group(1)) if m else None
