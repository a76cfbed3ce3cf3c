"""Paths between devices of the PCI tree, as ``nvidia-smi topo -m`` names them: pure.

A PCIe switch shows in sysfs as two levels, its upstream port and one downstream port
per slot (``0000:16:00.0/0000:17:01.0/0000:19:00.0``); a root port and the device in
its slot are two levels too. NCCL reads the tree the same way (src/graph/xml.cc,
``ncclTopoGetXmlFromSys``: "rewind two /" at each step): a device's parent is the
bridge two levels up, so a GPU and a NIC behind one switch are siblings. On that
folded tree:

- ``PIX``: the same parent (one switch between them);
- ``PXB``: a common ancestor below the host bridge (nested switches);
- ``PHB``: only the host bridge (``pci0000:15``) in common;
- ``NODE`` / ``SYS``: different host bridges, on the same / another NUMA node;
- ``NV#``: GPUs joined by # NVLinks (through NVSwitches the tree shows, or as
  ``nvidia-smi topo -m`` printed them where the tree cannot tell the peers).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from dolmen.facts.topology.model import Path, PathKind, TopoMatrix
from dolmen.facts.topology.tree_model import GPU, Device, HostTopology
from dolmen.values.busid import sysfs_name


def chain_from_link(target: str) -> tuple[str | None, tuple[str, ...]]:
    """The host bridge and the bridges above a device, from its sysfs link target
    (``../../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:19:00.0``);
    (None, ()) for a target that holds no ``pci<domain>:<bus>`` folder."""
    parts = [p for p in target.split("/") if p and p not in (".", "..")]
    roots = [i for i, p in enumerate(parts) if p.startswith("pci") and ":" in p]
    if not roots:
        return None, ()
    start = roots[-1]
    below = [p for p in parts[start + 1 :] if sysfs_name(p) is not None]
    return parts[start], tuple(below[:-1])


def folded(chain: tuple[str, ...]) -> tuple[str, ...]:
    """The ancestors NCCL's walk keeps (every other bridge, from the one two levels up),
    top first."""
    return tuple(reversed(chain[-2::-2]))


def pcie_path(a: Device, b: Device, single_node: bool) -> PathKind | None:
    """The PCIe/CPU path between two devices; None when either has no place in the tree,
    or they sit on different host bridges and a NUMA node is unknown (on a host with
    more than one node)."""
    if a.root is None or b.root is None:
        return None
    if a.root != b.root:
        if a.numa_node is None or b.numa_node is None:
            return PathKind.NODE if single_node else None
        return PathKind.NODE if a.numa_node == b.numa_node else PathKind.SYS
    fa, fb = folded(a.chain), folded(b.chain)
    if fa and fb and fa[-1] == fb[-1]:
        return PathKind.PIX
    common = 0
    for x, y in zip(fa, fb, strict=False):
        if x != y:
            break
        common += 1
    return PathKind.PXB if common else PathKind.PHB


def nvswitch_links(gpus: Iterable[Device]) -> dict[tuple[str, str], int]:
    """GPU pairs joined through NVSwitches: each pair with NVLinks up on both sides, as
    many as the fewer of the two (nvidia-smi prints NV18 for 18 links to the fabric)."""
    up = [(g.label, g.nvlinks) for g in gpus if g.nvlinks]
    return {(a, b): min(x, y) for i, (a, x) in enumerate(up) for b, y in up[i + 1 :]}


def matrix_links(m: TopoMatrix, labels: Mapping[int, str]) -> dict[tuple[str, str], int]:
    """NVLink pairs as ``nvidia-smi topo -m`` printed them, by our GPU labels (the
    matrix's ``GPU<n>`` is the nvidia-smi index, as ours)."""
    out: dict[tuple[str, str], int] = {}
    for a in m.gpus:
        for b in m.gpus:
            p = m.path(a, b)
            la, lb = labels.get(int(a[3:])), labels.get(int(b[3:]))
            if p is not None and p.kind is PathKind.NV and la and lb and la < lb:
                out[(la, lb)] = p.links
    return out


def all_paths(
    devices: tuple[Device, ...], nvlink: Mapping[tuple[str, str], int], single_node: bool
) -> tuple[dict[str, dict[str, Path]], dict[str, str]]:
    """Every placed pair both ways, and a reason per device that could not be placed."""
    paths: dict[str, dict[str, Path]] = {d.label: {} for d in devices}
    unread: dict[str, str] = {}
    for i, a in enumerate(devices):
        if a.root is None:
            unread[f"{a.label}.path"] = f"missing (no PCI location for {a.name or a.bdf})"
        for b in devices[i + 1 :]:
            links = nvlink.get((a.label, b.label)) or nvlink.get((b.label, a.label))
            if links and a.kind == GPU and b.kind == GPU:
                p: Path | None = Path(PathKind.NV, links)
            else:
                kind = pcie_path(a, b, single_node)
                p = Path(kind) if kind is not None else None
            if p is not None:
                paths[a.label][b.label] = paths[b.label][a.label] = p
    return paths, unread


def compare(topo: HostTopology, m: TopoMatrix) -> tuple[tuple[str, ...], int, int]:
    """Where the tree and ``nvidia-smi topo -m`` disagree, one line per cell or affinity,
    and the number of cells compared and agreeing. NV cells taken from the matrix itself
    are not compared (they would agree by construction), nor cells either side lacks."""
    lines: list[str] = []
    compared = agreed = 0
    for said, seen, line in _both_say(topo, m):
        if said is None or seen is None:
            continue
        compared += 1
        if said == seen:
            agreed += 1
        else:
            lines.append(line)
    return tuple(lines), compared, agreed


def _both_say(topo: HostTopology, m: TopoMatrix) -> Iterator[tuple[object, object, str]]:
    """What the matrix says and what the tree shows of each cell and each GPU's or NIC's
    affinity, with the line that says they differ."""
    ours = _our_labels(topo, m)
    cols = [c for c in m.devices if c in ours]
    for i, a in enumerate(cols):
        for b in cols[i + 1 :]:
            theirs, mine = m.path(a, b), topo.path(ours[a], ours[b])
            nv = theirs is not None and theirs.kind is PathKind.NV
            if nv and topo.nvlink == "nvidia-smi topo -m":
                continue
            yield theirs, mine, f"{a}-{b}: nvidia-smi prints {theirs}, the PCI tree gives {mine}"
    by = topo.by_label()
    for label, aff in m.affinity.items():
        dev = by.get(ours.get(label, ""))
        if dev is None:
            continue
        # a CpuList prints in the kernel's list form, as nvidia-smi does
        for what, said, seen in (
            ("NUMA", aff.numa_node, dev.numa_node),
            ("CPUs", aff.cpus, dev.cpus),
        ):
            yield said, seen, f"{label}: {what} {said} in nvidia-smi, {seen} in sysfs"


def _our_labels(topo: HostTopology, m: TopoMatrix) -> dict[str, str]:
    """The matrix's labels mapped to ours: GPUs by index, NICs by device name."""
    out = {f"GPU{g.index}": g.label for g in topo.gpus if g.index is not None}
    names = {n.name: n.label for n in topo.nics if n.name}
    for col in m.nics:
        if m.nic_name(col) in names:
            out[col] = names[m.nic_name(col)]
    return out


def empty_reason(topo: HostTopology) -> str | None:
    """Why ``topo`` has nothing to show: no PCI tree, or no GPU and no NIC in it; None when
    it has something."""
    if "devices" in topo.unread:
        return f"no PCI tree: {topo.unread['devices']}"
    if not topo.gpus and not topo.nics:
        return "no NVIDIA GPU and no RDMA NIC in the PCI tree (sys/bus/pci/devices)"
    return None
