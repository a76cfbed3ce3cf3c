"""Topology facts: ``nvidia-smi topo -m``, the path between every GPU and GPU or NIC.

Source: the command ``nvidia-smi topo -m`` (tree key ``nvidia-smi%20topo%20-m``, which
``dolmen snapshot`` records). Per device pair the path kind (``NV18``, ``PIX``,
``SYS``...), per GPU the CPU and NUMA affinity the driver reports, and the NIC Legend
(``NIC0`` is ``mlx5_0``). What the GPUs are (model, bus id) is the ``gpu`` facts';
``GPU<n>`` here is the nvidia-smi index, the driver's enumeration order.

The dataclasses are in ``model``, the pure parser in ``parse``; ``collect`` reads.
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
from dolmen.host import Host, RunStatus

__all__ = [
    "ARGV",
    "THROUGH_CPU",
    "GpuAffinity",
    "Path",
    "PathKind",
    "TopoMatrix",
    "TopologyFacts",
    "collect",
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
