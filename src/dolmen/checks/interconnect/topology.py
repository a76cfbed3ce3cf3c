"""The ``nvidia-smi topo -m`` matrix against what the board should have, per GPU.

Three judgements, one finding per GPU (the worst of them, every reason in the summary):

- NVLink paths. HGX/DGX boards (the KB gives their models NVLink: SXM) join every GPU
  pair by NVLink, through NVSwitches (NV18 on H100/H200/B200, NV12 on A100) or directly
  (NV4 on 4-GPU A100 boards). A pair printed SYS/NODE/PHB/PIX/PXB while one of its GPUs
  reaches most of its other peers by NVLink is a missing path: fail, naming the pair.
  The "most of its peers" test leaves alone designs where GPUs are bridged two by two
  (PCIe cards with NVLink bridges) or meshed (DGX-1's hybrid cube mesh). NVLink pairs
  bonded with fewer links than most of their siblings: warn (a link trained down).
- GPU-NIC paths, on 8-GPU NVLink boards with NICs where at least one GPU has a NIC on
  its PCIe switch (PIX/PXB), i.e. a board laid out for GPUDirect RDMA: a GPU whose
  nearest NIC is PHB/NODE/SYS sends its RDMA traffic through the CPU: warn.
- Affinity: the CPU list and NUMA node the driver prints for a GPU against the GPU's own
  ``local_cpulist`` and ``numa_node`` in sysfs (``pci`` facts): a disagreement is warn.

The matrix comes from the command; a bundle without it is a skip, a failed command an
unknown. ``GPU<n>`` is matched to the driver's n-th GPU of the ``gpu`` facts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import (
    Level,
    Outcome,
    Status,
    check,
    failed,
    passed,
    skipped,
    unknown,
    warned,
)
from dolmen.facts.topology import THROUGH_CPU, PathKind, TopoMatrix, gpu_index
from dolmen.host.gpu import Gpu
from dolmen.values.busid import gpu_subject
from dolmen.values.cpulist import format_cpulist

NVLINK_REMEDY = (
    "Look at nvidia-smi nvlink -s and nvidia-smi nvlink -e for the pair's links; on NVSwitch "
    "systems check the fabric manager (systemctl status nvidia-fabricmanager). Reset the GPUs "
    "when idle (nvidia-smi -r) or reboot; a path that stays missing is a GPU, baseboard or "
    "NVSwitch fault: drain the node (<drain>) and open a service case (reseat, RMA)."
)
NIC_REMEDY = (
    "Check that every NIC the system guide places beside a GPU is present and enabled (lspci, "
    "ibstat) and in its slot; until then NCCL routes that GPU's traffic through the CPU "
    "(slower, or PXN through a peer)."
)
AFFINITY_REMEDY = (
    "Update the BIOS and baseboard firmware (ACPI SRAT/proximity tables); meanwhile pin by the "
    "sysfs numa_node (numactl, NCCL_TOPO_FILE) rather than nvidia-smi's affinity."
)

_ORDER = (Status.FAIL, Status.WARN, Status.UNKNOWN, Status.PASS)
Note = tuple[Status | None, str, str]  # status (None: said, not judged), text, remedy


@check(
    "interconnect.topology",
    title="Every GPU pair has its NVLink path, a NIC on its PCIe switch, the affinity sysfs has",
    level=Level.STANDARD,
    needs=("topology", "gpu", "pci"),
    when=("nvidia_gpu",),
    remedy=NVLINK_REMEDY,
    source=(
        "nvidia-smi topo -m legend (NVIDIA); NVIDIA GPUDirect RDMA user manual (place the HCA "
        "and the GPU close on PCIe for GPUDirect RDMA performance); azurehpc-health-checks "
        "azure_hw_topology_check (GPU and NIC placement per NUMA node)"
    ),
)
def topology(ctx: Context) -> list[Outcome]:
    """Reads the matrix (``topology``), the GPUs' models and order (``gpu``), sysfs (``pci``)."""
    facts = ctx.topology
    m = facts.matrix
    if m is None:
        why = facts.unread.get("matrix", "not read")
        if why.startswith("missing") and ctx.host.kind != "live":
            return [skipped("host", "not in this bundle: nvidia-smi topo -m")]
        return [unknown("host", f"nvidia-smi topo -m unreadable: {why}")]
    by_position = {g.position: g for g in ctx.gpu.gpus}
    gpus = {label: by_position.get(_index(label)) for label in m.gpus}
    nvlink = _nvlink_notes(ctx, m, gpus)
    nics = _nic_notes(m, nvlink_board=bool(nvlink))
    out = [_outcome(ctx, m, label, gpu, nvlink, nics) for label, gpu in gpus.items()]
    listed = {_index(label) for label in m.gpus}
    for g in ctx.gpu.gpus:
        if g.position not in listed:
            out.append(unknown(g.subject, f"GPU{g.position} is not in the topo -m matrix"))
    return out


def _nvlink_notes(
    ctx: Context, m: TopoMatrix, gpus: Mapping[str, Gpu | None]
) -> dict[str, list[Note]]:
    """Per GPU label, its NVLink findings; empty when the board is not an NVLink board."""
    # A GPU no inventory names (the matrix alone) is held to the matrix itself: the rule
    # below only asks what most of its peers have, so NVLink printed anywhere is enough.
    labels = list(gpus)
    printed_nv = any(
        (p := m.path(a, b)) is not None and p.kind is PathKind.NV
        for i, a in enumerate(labels)
        for b in labels[i + 1 :]
    )
    judged = [n for n, g in gpus.items() if _kb_links(ctx, g) or (g is None and printed_nv)]
    pairs = {(a, b): m.path(a, b) for i, a in enumerate(judged) for b in judged[i + 1 :]}
    nv = {k: p for k, p in pairs.items() if p is not None and p.kind is PathKind.NV}
    if not nv:
        return {}
    notes: dict[str, list[Note]] = {label: [] for label in judged}

    def mostly_nvlink(a: str, b: str) -> bool:
        others = [c for c in judged if c not in (a, b)]
        on_nv = sum(1 for c in others if (p := m.path(a, c)) and p.kind is PathKind.NV)
        return bool(others) and on_nv * 2 > len(others)

    counts = Counter(p.links for p in nv.values())
    usual = max(counts, key=lambda n: (counts[n], n))
    for (a, b), p in pairs.items():
        if p is None:
            text = f"{a}-{b}: path not read"
            notes[a].append((Status.UNKNOWN, text, NVLINK_REMEDY))
            notes[b].append((Status.UNKNOWN, text, NVLINK_REMEDY))
        elif p.kind is not PathKind.NV and (mostly_nvlink(a, b) or mostly_nvlink(b, a)):
            text = f"{a}-{b}: {p} where their other peers are NVLink (missing NVLink/NVSwitch path)"
            notes[a].append((Status.FAIL, text, NVLINK_REMEDY))
            notes[b].append((Status.FAIL, text, NVLINK_REMEDY))
        elif p.kind is PathKind.NV and len(nv) >= 3 and p.links < usual:
            text = f"{a}-{b}: {p} where its siblings are NV{usual} (fewer bonded links)"
            notes[a].append((Status.WARN, text, NVLINK_REMEDY))
            notes[b].append((Status.WARN, text, NVLINK_REMEDY))
    for label in judged:
        if not notes[label]:
            mine = [p for k, p in nv.items() if label in k]
            kinds = "/".join(sorted({str(p) for p in mine}))
            peers = len(judged) - 1
            to = "every peer" if len(mine) == peers else f"{len(mine)} of {peers} peers"
            if mine:
                notes[label].append((Status.PASS, f"{kinds} to {to}", ""))
            else:  # no peer of it reaches most GPUs by NVLink either: nothing to hold it to
                notes[label].append((None, "no NVLink to any peer", ""))
    return notes


def _kb_links(ctx: Context, gpu: Gpu | None) -> int:
    model = ctx.kb.gpus.match(gpu.name) if gpu is not None and gpu.name else None
    return (model.nvlink_links or 0) if model is not None else 0


def _nic_notes(m: TopoMatrix, *, nvlink_board: bool) -> dict[str, Note]:
    """Per GPU label, how near its nearest NIC is; empty where the rule does not apply."""
    if not nvlink_board or len(m.gpus) < 8 or not m.nics:
        return {}
    nearest: dict[str, tuple[PathKind, str] | None] = {}
    unread: dict[str, int] = {}
    for g in m.gpus:
        known = [(p.kind, m.nic_name(n)) for n in m.nics if (p := m.path(g, n)) is not None]
        unread[g] = len(m.nics) - len(known)
        nearest[g] = min(known, key=lambda k: k[0].rank) if known else None
    if not any(v is not None and v[0] not in THROUGH_CPU for v in nearest.values()):
        return {}  # no GPU has a NIC on its switch: not a board laid out for GPUDirect RDMA
    notes: dict[str, Note] = {}
    for g, best in nearest.items():
        if best is not None and best[0] not in THROUGH_CPU:
            notes[g] = (Status.PASS, f"NIC {best[1]} at {best[0].value}", "")
        elif unread[g]:
            seen = f", the nearest read is {best[1]} at {best[0].value}" if best else ""
            notes[g] = (Status.UNKNOWN, f"paths to {unread[g]} NIC(s) not read{seen}", NIC_REMEDY)
        elif best is not None:
            text = f"nearest NIC {best[1]} is {best[0].value}: GPUDirect RDMA crosses the CPU"
            notes[g] = (Status.WARN, text, NIC_REMEDY)
    return notes


def _affinity_note(ctx: Context, m: TopoMatrix, label: str, gpu: Gpu | None) -> Note:
    unread = ctx.topology.unread
    aff = m.affinity.get(label)
    if aff is None:
        why = unread.get(f"{label}.cpus", "not read")
        status = None if why.startswith(("not supported", "missing (an empty")) else Status.UNKNOWN
        return (status, f"affinity not read ({why})", AFFINITY_REMEDY)
    dev = ctx.pci.by_bdf().get(gpu.pci_address) if gpu and gpu.pci_address else None
    if dev is None:
        bundle = ctx.host.kind != "live"
        where = "not in this bundle: sys/bus/pci" if bundle else "no sys/bus/pci on this host"
        if ctx.pci.devices:
            where = "the GPU is not in sys/bus/pci"
        return (None, f"affinity not compared ({where})", "")
    problems: list[str] = []
    agreed: list[str] = []
    # numa_node -1: the firmware gives the GPU no node, and nvidia-smi may still print one.
    sysfs_node = dev.numa_node if dev.numa_node is not None and dev.numa_node >= 0 else None
    if aff.numa_node is not None and sysfs_node is not None:
        if aff.numa_node != sysfs_node:
            problems.append(f"NUMA node {aff.numa_node} in topo -m, {sysfs_node} in sysfs")
        agreed.append(f"NUMA node {sysfs_node}")
    local = dev.local_cpus
    if aff.cpus is not None and local is not None:
        if tuple(aff.cpus) != tuple(local):
            problems.append(f"CPUs {aff.cpus} in topo -m, {format_cpulist(local)} in local_cpulist")
        agreed.insert(0, f"CPUs {aff.cpus}")
    if problems:
        return (Status.WARN, "; ".join(problems), AFFINITY_REMEDY)
    if not agreed:
        return (None, "affinity not compared (no value both in topo -m and sysfs)", "")
    return (Status.PASS, f"{', '.join(agreed)} as sysfs", "")


def _outcome(
    ctx: Context,
    m: TopoMatrix,
    label: str,
    gpu: Gpu | None,
    nvlink: Mapping[str, list[Note]],
    nics: Mapping[str, Note],
) -> Outcome:
    notes = [*nvlink.get(label, ()), *([nics[label]] if label in nics else [])]
    notes.append(_affinity_note(ctx, m, label, gpu))
    subject = gpu.subject if gpu is not None else gpu_subject(index=_index(label))
    row = {n: str(p) for n in m.devices if n != label and (p := m.path(label, n)) is not None}
    ev: dict[str, Any] = {"label": label, "paths": row}
    if not nvlink:
        notes.insert(0, (None, _no_nvlink(ctx, m, gpu), ""))
    judged = [n for n in notes if n[0] is not None]
    status = next((s for s in _ORDER if any(n[0] is s for n in judged)), None)
    if status is None:
        return skipped(
            subject, f"{label}: nothing to judge: {'; '.join(n[1] for n in notes)}", **ev
        )
    shown = [n[1] for n in notes if n[0] is status] + [n[1] for n in notes if n[0] is not status]
    summary = f"{label}: {'; '.join(shown)}"
    remedy = next(n[2] for n in notes if n[0] is status) or None
    if status is Status.FAIL:
        return failed(subject, summary, remedy=remedy, **ev)
    if status is Status.WARN:
        return warned(subject, summary, remedy=remedy, **ev)
    if status is Status.UNKNOWN:
        return unknown(subject, summary, remedy=remedy, **ev)
    return passed(subject, summary, **ev)


def _index(label: str) -> int:
    """``GPU3`` -> 3 (the matrix's GPU labels always carry one)."""
    index = gpu_index(label)
    return -1 if index is None else index


def _no_nvlink(ctx: Context, m: TopoMatrix, gpu: Gpu | None) -> str:
    if len(m.gpus) < 2:
        return "one GPU"
    if gpu is None or not gpu.name:
        return "NVLink paths not judged (the driver's inventory does not name this GPU)"
    model = ctx.kb.gpus.match(gpu.name)
    if model is None:
        return f"NVLink paths not judged ({gpu.name} is not in the KB)"
    if not model.nvlink_links:
        return f"no NVLink expected ({model.name} has none in the KB)"
    return "no NVLink between any GPUs in the matrix (see interconnect.nvlink.state)"
