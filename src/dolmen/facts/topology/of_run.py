"""``tree_of_run(store)``: the host topology from the facts a run has already loaded.

A validate run at level standard loads the ``pci``, ``gpu``, ``infiniband``, ``numa`` and
``topology`` (``nvidia-smi topo -m``) facts for its checks; the verdict's inventory
draws the topology from those (``build.build_tree``), reading only each device's sysfs
link target. Nothing is collected here: a run that did not load one of them (the quick
tier, an ``--only`` run) gets the reason instead.
"""

from __future__ import annotations

from dolmen.facts import FactError, FactStore
from dolmen.facts.topology.build import Sources, build_tree
from dolmen.facts.topology.model import TopoMatrix
from dolmen.facts.topology.tree_model import HostTopology

NEEDS = ("pci", "gpu", "infiniband", "numa", "topology")


def tree_of_run(store: FactStore) -> HostTopology | str:
    """The topology, or why it was not built: which facts the run did not load or could
    not read."""
    got = {}
    for name in NEEDS:
        facts = store.done(name)
        if facts is None:
            return f"not read: this run loaded no {name} facts"
        if isinstance(facts, FactError):
            return f"unreadable: {name} facts: {facts.message}"
        got[name] = facts
    matrix: TopoMatrix | None = got["topology"].matrix

    def read_matrix() -> TopoMatrix | None:
        return matrix

    ports = got["infiniband"].ports
    src = Sources(got["pci"], got["gpu"], ports, got["numa"], read_matrix)
    return build_tree(store.host, src)
