"""The ``dolmen.topo/1`` document (``dolmen topo --json``): pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dolmen.facts.topology.tree_model import Device, HostTopology

SCHEMA = "dolmen.topo/1"


def _device(d: Device) -> dict[str, Any]:
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


def topo_doc(
    topo: HostTopology,
    host: Mapping[str, Any],
    nvidia_smi: tuple[Sequence[str], int, int] | None,
) -> dict[str, Any]:
    """The document: devices, the matrix, each GPU's closest NICs, the comparison with
    ``nvidia-smi topo -m`` (null where it was not recorded), what was not read."""
    labels = [d.label for d in topo.devices]
    return {
        "schema": SCHEMA,
        "host": dict(host),
        "source": topo.source,
        "nvlink_source": topo.nvlink or None,
        "devices": [_device(d) for d in topo.devices],
        "matrix": {
            a: {b: str(p) for b in labels if (p := topo.path(a, b)) is not None} for a in labels
        },
        "closest_nic": {g.label: list(topo.closest_nics(g.label)) for g in topo.gpus},
        "nvidia_smi": (
            None
            if nvidia_smi is None
            else {
                "compared": nvidia_smi[1],
                "agreed": nvidia_smi[2],
                "disagreements": list(nvidia_smi[0]),
            }
        ),
        "unread": dict(topo.unread),
    }
