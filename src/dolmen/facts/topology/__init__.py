"""Topology facts: ``nvidia-smi topo -m``, the path between every GPU and GPU or NIC.

Source: the command ``nvidia-smi topo -m`` (tree key ``nvidia-smi%20topo%20-m``, which
``dolmen snapshot`` records). Per device pair the path kind (``NV18``, ``PIX``,
``SYS``...), per GPU the CPU and NUMA affinity the driver reports, and the NIC Legend
(``NIC0`` is ``mlx5_0``). What the GPUs are (model, bus id) is the ``gpu`` facts';
``GPU<n>`` here is the nvidia-smi index, the driver's enumeration order.

The dataclasses are in ``model``, the pure parser in ``parse``; ``collect`` reads.

The topology dolmen builds itself from the PCI tree (``collect_tree``: where each GPU,
NIC and NVSwitch sits, the same letter codes computed, the closest NIC of each GPU) is
in ``tree_model`` (dataclasses), ``tree`` (pure: paths, the comparison with the matrix),
``build`` (the tree from facts already read, placing each device), ``sysfs`` (reading
those facts), ``of_run`` (the tree from the facts a validate run loaded) and
``tree_json`` (its JSON pieces, for ``dolmen.topo/1`` and the verdict); ``gids`` reads the
RoCE v2 GID index of a port.
"""

from __future__ import annotations

from dolmen.facts.topology.model import (
    THROUGH_CPU,
    GpuAffinity,
    Path,
    PathKind,
    TopologyFacts,
    TopoMatrix,
    gpu_index,
    is_gpu_label,
)
from dolmen.facts.topology.parse import parse_path, parse_topo
from dolmen.facts.topology.sysfs import collect_tree
from dolmen.facts.topology.tree import compare
from dolmen.facts.topology.tree_model import Device, HostTopology
from dolmen.host import Host, RunStatus

__all__ = [
    "ARGV",
    "THROUGH_CPU",
    "Device",
    "GpuAffinity",
    "HostTopology",
    "Path",
    "PathKind",
    "TopoMatrix",
    "TopologyFacts",
    "collect",
    "collect_tree",
    "compare",
    "gpu_index",
    "is_gpu_label",
    "parse_path",
    "parse_topo",
]

ARGV = ("nvidia-smi", "topo", "-m")
# NVML walks the PCI tree for every pair; on 8-GPU nodes with persistence mode off the
# driver also initialises each GPU first, which takes seconds.
TIMEOUT = 30.0


def collect(host: Host) -> TopologyFacts:
    """Run (or read the recording of) ``nvidia-smi topo -m`` and parse it."""
    res = host.run(list(ARGV), timeout=TIMEOUT)
    if res.status is not RunStatus.OK:
        return TopologyFacts(None, {"matrix": res.failure()})
    matrix, unread = parse_topo(res.stdout)
    return TopologyFacts(matrix, unread)
