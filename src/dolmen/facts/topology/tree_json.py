"""The host topology as plain JSON values: pure.

The pieces of ``dolmen.topo/1`` (``report/topology/document.py`` assembles the document)
and ``picture_part``, the smallest part of it that draws the picture, which a validate
run's verdict carries (``inventory.topology.tree``) for the fleet dashboard's node page.
``report/topology/rebuild.py`` reads both back.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dolmen.facts.topology.tree_model import Device, HostTopology

# What the picture needs of a device: where it sits (root, chain, NUMA node) and its box
# (label, kind, name, bus id).
PLACE = ("label", "kind", "bdf", "name", "root", "chain", "numa_node")


def device_json(d: Device) -> dict[str, Any]:
    """One device of ``dolmen.topo/1``'s ``devices``."""
    return {
        "label": d.label,
        "kind": d.kind,
        "bdf": d.bdf,
        "name": d.name,
        "index": d.index,
        "root": d.root,
        "chain": list(d.chain),
        "numa_node": d.numa_node,
        "cpus": str(d.cpus) if d.cpus is not None else None,
        "link": (
            {"speed_gts": d.link_speed_gts, "width": d.link_width}
            if d.link_speed_gts is not None or d.link_width is not None
            else None
        ),
        "nvlinks": d.nvlinks,
        "ports": [
            {
                "port": p.port,
                "link_layer": p.link_layer,
                "state": p.state,
                "rate_gbps": p.rate_gbps,
                "roce_v2_gid_index": p.roce_v2_gid,
            }
            for p in d.ports
        ],
    }


def numa_json(topo: HostTopology) -> dict[str, str]:
    """NUMA node -> its CPUs (the kernel's list form), nodes in order."""
    return {str(node): str(cpus) for node, cpus in sorted(topo.numa.items())}


def matrix_json(
    topo: HostTopology, rows: Iterable[Device] | None = None
) -> dict[str, dict[str, str]]:
    """The path of every placed pair, one row per device of ``rows`` (every device by
    default), each row over every device."""
    labels = [d.label for d in topo.devices]
    return {
        a.label: {b: str(p) for b in labels if (p := topo.path(a.label, b)) is not None}
        for a in (topo.devices if rows is None else rows)
    }


def picture_part(topo: HostTopology) -> dict[str, Any]:
    """What the picture is drawn from: ``dolmen.topo/1`` less what it does not show (the
    devices' CPUs, links and ports, the closest NICs, which the paths give, the comparison
    with ``nvidia-smi topo -m``), and the matrix's GPU rows only (the picture draws the
    NVLinks between GPUs and each GPU's closest NIC): about a third of the matrix."""
    return {
        "source": topo.source,
        "nvlink_source": topo.nvlink or None,
        "numa": numa_json(topo),
        "devices": [{k: v for k, v in device_json(d).items() if k in PLACE} for d in topo.devices],
        "matrix": matrix_json(topo, topo.gpus),
        "unread": dict(topo.unread),
    }
