"""The topology as the matrix ``nvidia-smi topo -m`` prints, from the PCI tree: pure.

Rows and columns are the GPUs (nvidia-smi index) and the NICs (``NIC<n>``, named in
the NIC Legend, as nvidia-smi does), then the CPU and NUMA affinity of each GPU. A cell
the tree cannot place is ``?``. Below: the legend, each GPU's closest NIC, where
``nvidia-smi topo -m`` (when recorded) disagrees, and what could not be read.
"""

from __future__ import annotations

from collections.abc import Sequence

from dolmen.facts.topology.tree_model import HostTopology
from dolmen.values.text import printable

LEGEND = (
    "  X    = Self",
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes",
    "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges"
    " within a NUMA node",
    "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
    "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host"
    " Bridge)",
    "  PIX  = Connection traversing at most a single PCIe bridge",
    "  NV#  = Connection traversing a bonded set of # NVLinks",
)


def render_matrix(
    topo: HostTopology,
    disagreements: Sequence[str] | None = None,
    compared: tuple[int, int] | None = None,
) -> str:
    """The matrix and its notes (module docstring); ``disagreements`` and ``compared``
    (cells compared, cells agreeing) when nvidia-smi topo -m was recorded."""
    labels = [d.label for d in (*topo.gpus, *topo.nics)]
    rows = [["", *labels, "CPU Affinity", "NUMA Affinity"]]
    for a in labels:
        dev = topo.by_label()[a]
        cells = [" X " if a == b else str(topo.path(a, b) or "?") for b in labels]
        cpus = str(dev.cpus) if dev.cpus is not None and dev.kind == "gpu" else ""
        node = "" if dev.kind != "gpu" else "N/A" if dev.numa_node is None else str(dev.numa_node)
        rows.append([a, *cells, cpus or ("N/A" if dev.kind == "gpu" else ""), node])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    out += ["", "Legend:", "", *LEGEND]
    if topo.nics:
        out += ["", "NIC Legend:", ""]
        out += [f"  {n.label}: {printable(n.name or n.bdf)}" for n in topo.nics]
    out += ["", f"Closest NIC of each GPU (from {topo.source}):"]
    for g in topo.gpus:
        near = topo.closest_nics(g.label)
        names = [
            f"{n} ({printable(topo.by_label()[n].name or topo.by_label()[n].bdf)})" for n in near
        ]
        path = topo.path(g.label, near[0]) if near else None
        out.append(f"  {g.label}: {', '.join(names) + f' [{path}]' if near else 'none placed'}")
    if compared is not None:
        total, agreed = compared
        out += ["", f"nvidia-smi topo -m: {agreed} of {total} cells and affinities agree"]
        out += [f"  differs: {printable(line)}" for line in disagreements or ()]
    if topo.unread:
        out += ["", "Not read:"]
        out += [f"  {k}: {printable(v)}" for k, v in sorted(topo.unread.items())]
    return "\n".join(out) + "\n"
