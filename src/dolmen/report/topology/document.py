"""The ``dolmen.topo/1`` document (``dolmen topo --json``): pure.

Its pieces are ``facts/topology/tree_json.py``'s, shared with the part a verdict carries;
``rebuild.py`` reads either back into the topology."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dolmen.facts.topology.tree_json import device_json, matrix_json, numa_json
from dolmen.facts.topology.tree_model import HostTopology

SCHEMA = "dolmen.topo/1"


def topo_doc(
    topo: HostTopology,
    host: Mapping[str, Any],
    nvidia_smi: tuple[Sequence[str], int, int] | None,
) -> dict[str, Any]:
    """The document: devices, the NUMA nodes' CPUs, the matrix, each GPU's closest NICs,
    the comparison with ``nvidia-smi topo -m`` (null where it was not recorded), what was
    not read."""
    return {
        "schema": SCHEMA,
        "host": dict(host),
        "source": topo.source,
        "nvlink_source": topo.nvlink or None,
        "numa": numa_json(topo),
        "devices": [device_json(d) for d in topo.devices],
        "matrix": matrix_json(topo),
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
