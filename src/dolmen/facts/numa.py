"""NUMA facts: nodes with their CPUs, memory, huge page pools and distances.

Sources: ``sys/devices/system/node/{online,node<N>/{cpulist,meminfo,distance,hugepages}}``.
A node may have no CPUs: Grace Hopper exposes GPU memory as CPU-less nodes, and
CXL memory expanders do the same, so an empty ``cpulist`` is a fact, not a gap.
A kernel built without NUMA has no ``sys/devices/system/node``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from dolmen.facts.memory import HugePagePool, parse_meminfo, read_pools
from dolmen.facts.reading import (
    absent,
    malformed,
    parse_cpulist,
    parsed,
    read_text,
    read_value,
)
from dolmen.frozen import frozen
from dolmen.frozen.regex import pattern
from dolmen.host import NOT_IN_BUNDLE, Host

_NODE = pattern(r"node\d+")

NODE = "sys/devices/system/node"


@frozen
class NumaNode:
    """One NUMA node. None fields are explained in the facts' ``unread`` as ``node<N>.<field>``."""

    id: int
    cpus: tuple[int, ...] | None
    mem_total_bytes: int | None
    mem_free_bytes: int | None
    distances: tuple[int, ...] | None  # to node 0, 1, ... in ``distance`` order
    hugepages: tuple[HugePagePool, ...] = ()


@frozen
class NumaFacts:
    """The host's NUMA layout; ``nodes`` is empty where the kernel has no NUMA support."""

    nodes: tuple[NumaNode, ...]
    online: tuple[int, ...] | None
    unread: Mapping[str, str] = field(default_factory=dict)

    def node_of_cpu(self, cpu: int) -> int | None:
        """The node holding a CPU, None when no node lists it."""
        for node in self.nodes:
            if node.cpus and cpu in node.cpus:
                return node.id
        return None


def parse_distances(text: str) -> tuple[int, ...] | None:
    """A node's ``distance`` line (``10 21``); None when it is not a list of integers."""
    parts = text.split()
    if not parts or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def collect(host: Host) -> NumaFacts:
    """Read and parse the NUMA facts of ``host``."""
    unread: dict[str, str] = {}
    names = [n for n in host.listdir(NODE) if _NODE.fullmatch(n)]
    if not names:
        why = "not supported (no sys/devices/system/node: kernel without NUMA)"
        if host.absent(NODE) == NOT_IN_BUNDLE:  # a bundle without it says nothing of NUMA
            why = absent(host, NODE)
        elif not host.is_dir("sys/devices/system"):
            why = "missing (no sys/devices/system on this host)"
        unread["nodes"] = why
        return NumaFacts(nodes=(), online=None, unread=unread)

    online = parsed(read_value(host, f"{NODE}/online"), parse_cpulist, unread, "online")

    nodes = [_node(host, int(name[4:]), unread) for name in names]
    return NumaFacts(nodes=tuple(sorted(nodes, key=lambda n: n.id)), online=online, unread=unread)


def _node(host: Host, nid: int, unread: dict[str, str]) -> NumaNode:
    base = f"{NODE}/node{nid}"
    key = f"node{nid}"

    cpus = parsed(read_value(host, f"{base}/cpulist"), parse_cpulist, unread, f"{key}.cpus")

    total = free = None
    m = read_text(host, f"{base}/meminfo")
    if m.text is None:
        unread[f"{key}.mem_total_bytes"] = unread[f"{key}.mem_free_bytes"] = m.reason
    else:
        info = parse_meminfo(m.text)
        total, free = info.get("MemTotal"), info.get("MemFree")
        if total is None:
            unread[f"{key}.mem_total_bytes"] = malformed(m.text)
        if free is None:
            unread[f"{key}.mem_free_bytes"] = malformed(m.text)

    d = read_value(host, f"{base}/distance")
    distances = parsed(d, parse_distances, unread, f"{key}.distances")

    pools = read_pools(host, f"{base}/hugepages", unread, f"{key}.hugepages.")
    return NumaNode(nid, cpus, total, free, distances, tuple(pools))
