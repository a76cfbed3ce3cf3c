"""What ``dolmen topo`` reads and prints (the matrix, ``--json``), without click: run by the
click command (cli/topo.py, which adds the pictures) and by the lean entry (cli/lean.py
``READS``) alike."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dolmen.facts.topology import HostTopology, TopoMatrix


def read_topo(source: str | None) -> tuple[HostTopology, TopoMatrix | None, dict[str, Any]]:
    """The PCI tree's topology (or InputError naming what is missing), the recorded
    ``nvidia-smi topo -m`` and the host's description, of the host or ``--from`` tree."""
    from functools import cache

    from dolmen.facts import topology
    from dolmen.host import open_host

    with open_host(source) as host:
        # read once: the tree's NV cells may need it too (NVLinks and no NVSwitch in the
        # tree), and on a live host each run of nvidia-smi topo -m takes seconds
        matrix = cache(lambda: topology.collect(host).matrix)
        tree = require_devices(topology.collect_tree(host, matrix=matrix))
        return tree, matrix(), host.describe()


def show_topo(source: str | None = None, as_json: bool = False) -> None:
    """Print the matrix, each GPU's closest NIC and the agreement with ``nvidia-smi topo
    -m`` where recorded; ``as_json``: dolmen.topo/1."""
    from dolmen.facts.topology import compare

    tree, matrix, info = read_topo(source)
    compared = compare(tree, matrix) if matrix is not None else None
    if as_json:
        import json

        from dolmen.report.topology.document import topo_doc

        sys.stdout.write(json.dumps(topo_doc(tree, info, compared), indent=2) + "\n")
        return
    from dolmen.report.topology.matrix import render_matrix

    lines = compared[0] if compared else None
    counts = (compared[1], compared[2]) if compared else None
    sys.stdout.write(render_matrix(tree, lines, counts))


def require_devices(tree: HostTopology) -> HostTopology:
    """The topology, or InputError naming what is missing (no PCI tree; no GPU, no NIC)."""
    from dolmen.errors import InputError
    from dolmen.facts.topology.tree import empty_reason

    why = empty_reason(tree)
    if why is None:
        return tree
    if "devices" in tree.unread:
        hint = "read a host tree with sys/bus/pci (dolmen snapshot records it) or lspci -vvv"
    else:
        hint = "is the driver's device present (lspci -d 10de:)? on a bundle: was sys/ recorded?"
    raise InputError(why, hint=hint)
