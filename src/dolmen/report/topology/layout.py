"""Where each box of the topology picture goes: pure, shared by the SVG and the PNG.

The picture is the folded PCI tree (``facts.topology.tree.folded``): NUMA nodes (CPUs)
on top, their host bridges, the PCIe switches, and every GPU, NIC and NVSwitch on the
bottom row in tree order, so devices behind one switch stand together. Edges are the
PCIe links; ``nvlink`` joins GPUs with NVLink (one band below them), ``affinity`` each
GPU to its closest NIC(s).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dolmen.facts.topology.tree import folded
from dolmen.facts.topology.tree_model import HostTopology

COLUMN = 1.0  # one leaf per unit of x; renderers scale
LEVEL = 1.0


@dataclass
class Box:
    """One node of the picture: ``kind`` is cpu, bridge, switch, gpu, nic, nvswitch."""

    key: str
    lines: tuple[str, ...]
    kind: str
    x: float = 0.0
    y: float = 0.0
    children: list[str] = field(default_factory=list)


@dataclass
class Layout:
    """The boxes, their PCIe edges, and the NVLink and GPU-NIC lines."""

    boxes: dict[str, Box]
    edges: list[tuple[str, str]]
    nvlink: list[tuple[str, str, str]]  # GPU, GPU, "NV18"
    affinity: list[tuple[str, str, str]]  # GPU, NIC, "PIX"
    width: float
    depth: int

    @property
    def nvlink_band(self) -> tuple[list[str], str] | None:
        """The GPUs (left to right) and their NV# when every pair of them has the same one
        (an NVSwitch board): drawn as one band instead of an arc per pair."""
        if not self.nvlink:
            return None
        gpus = sorted({g for a, b, _ in self.nvlink for g in (a, b)}, key=lambda k: self.boxes[k].x)
        kinds = {k for _, _, k in self.nvlink}
        if len(kinds) != 1 or len(self.nvlink) != len(gpus) * (len(gpus) - 1) // 2:
            return None
        return gpus, kinds.pop()


def layout(topo: HostTopology) -> Layout:
    """Place every device of ``topo`` (module docstring)."""
    boxes: dict[str, Box] = {}
    roots: list[str] = []

    def box(key: str, lines: tuple[str, ...], kind: str, parent: str | None) -> None:
        if key not in boxes:
            boxes[key] = Box(key, lines, kind)
            if parent is None:
                roots.append(key)
            else:
                boxes[parent].children.append(key)

    for dev in sorted(topo.devices, key=lambda d: (d.root is None, d.root or "", d.bdf)):
        node = dev.numa_node
        cpu = f"cpu:{node}"
        cpus = topo.numa.get(node) if node is not None else None
        box(cpu, (f"CPU {node if node is not None else '?'}", str(cpus or "")), "cpu", None)
        parent = cpu
        if dev.root is None:
            parent = "unplaced"
            box(parent, ("not placed",), "bridge", cpu)
        else:
            key = f"{cpu}/{dev.root}"
            box(key, (dev.root,), "bridge", cpu)
            parent = key
            for up in folded(dev.chain):
                child = f"{parent}/{up}"
                box(child, ("PCIe switch", up), "switch", parent)
                parent = child
        box(dev.label, _device_lines(dev.label, dev.name, dev.bdf), dev.kind, parent)
    depth = _depth(boxes, roots)
    leaves = _place(boxes, roots, depth)
    labels = {d.label for d in topo.devices}
    nv = [
        (g.label, h.label, str(p))
        for i, g in enumerate(topo.gpus)
        for h in topo.gpus[i + 1 :]
        if (p := topo.path(g.label, h.label)) is not None and p.kind.value == "NV"
    ]
    aff = [
        (g.label, n, str(topo.path(g.label, n)))
        for g in topo.gpus
        for n in topo.closest_nics(g.label)
        if n in labels
    ]
    edges = [(b.key, c) for b in boxes.values() for c in b.children]
    return Layout(boxes, edges, nv, aff, float(max(leaves, 1)), depth)


def _device_lines(label: str, name: str | None, bdf: str) -> tuple[str, ...]:
    short = (name or "").replace("NVIDIA ", "")
    return tuple(x for x in (label, short[:18], bdf[5:] if bdf.startswith("0000:") else bdf) if x)


def _depth(boxes: dict[str, Box], roots: list[str]) -> int:
    def walk(key: str) -> int:
        kids = boxes[key].children
        return 1 + max((walk(k) for k in kids), default=0)

    return max((walk(r) for r in roots), default=1)


def _place(boxes: dict[str, Box], roots: list[str], depth: int) -> int:
    """x by leaf order (parents centred over their children), y by level; devices on
    the bottom row. Returns the number of leaves."""
    count = 0

    def walk(key: str, level: int) -> float:
        nonlocal count
        b = boxes[key]
        if not b.children:
            b.x, b.y = count * COLUMN, (depth - 1) * LEVEL
            count += 1
            return b.x
        xs = [walk(k, level + 1) for k in b.children]
        b.x, b.y = (min(xs) + max(xs)) / 2, level * LEVEL
        return b.x

    for r in roots:
        walk(r, 0)
    return count
