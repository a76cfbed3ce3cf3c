"""GPU facts: the driver's inventory (``host.gpus``), NVIDIA GPUs on the PCI bus, NVLinks,
and every other source that shows a GPU exists.

Absence of a source is not evidence of absence (STYLE.md rule 18): a GPU exists if any
source shows one. ``seen`` maps each GPU's bus id to the sources that show it: the PCI
tree (sysfs), the driver's inventory (NVML or nvidia-smi, a truncated XML's ``<gpu id>``
included), the driver's ``proc/driver/nvidia/gpus/<bus id>`` folders, and ``lspci -vvv``
where the bundle has no PCI tree. ``unnamed`` counts GPUs a source shows without a bus id
(``nvidia-smi nvlink -s`` lists "GPU 0: ..."; nvidia-smi that "couldn't communicate with
the driver" shows the driver is installed for a GPU, unless a PCI tree read shows none).
``sources`` says, per source, "read" or why it was not. The kernel log's NVIDIA lines (an
Xid, a GPU off the bus, the driver's start-up lines naming each GPU it took) are one more
source, joined by :func:`seen_with_log` (the log is its own facts, read once).

``present`` is true when any of them shows a GPU, so "driver missing but GPU present" and
"GPU fell off the bus" (on the bus, not in the inventory) stay visible to checks. NVLink
state comes from NVML on a live host, else from one ``nvidia-smi nvlink -s``, else
from a recorded ``dcgmi nvlink --link-status`` (states, no speeds; gpuId is the position).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING

from dolmen.facts.gpu_nvlink import (
    DCGMI_ARGV,
    NvlinkGpu,
    parse_dcgmi_link_status,
    parse_nvlink_status,
)
from dolmen.facts.pci.lspci import lspci_cut, parse_lspci_vvv
from dolmen.facts.pci.model import GPU_CLASSES, NVIDIA, is_gpu
from dolmen.facts.reading import READ, absent, unrecorded
from dolmen.frozen import frozen
from dolmen.frozen.regex import pattern
from dolmen.host import Host, RunStatus
from dolmen.host.gpu import Gpu, GpuInventory, NvLink
from dolmen.values.busid import BusId

if TYPE_CHECKING:
    from dolmen.facts.kernel_log import KernelLogFacts

__all__ = ["GpuFacts", "NvlinkGpu", "SeenGpu", "collect", "parse_nvlink_status", "seen_with_log"]

NVLINK_ARGV = ("nvidia-smi", "nvlink", "-s")
NVLINK_TIMEOUT = 30.0
LSPCI_ARGV = ("lspci", "-vvv")
# A bundle may hold a shorter listing instead (``lspci -nn``, plain ``lspci``): every
# function still has its line, so each is as good a witness of the GPUs on the bus.
LSPCI_FALLBACKS = (("lspci", "-nn"), ("lspci",))
XML_ARGV = ("nvidia-smi", "-q", "-x")
PROC_GPUS = "proc/driver/nvidia/gpus"
PCI_DEVICES = "sys/bus/pci/devices"

# The sources of GPU facts, by the names ``sources`` and ``seen`` use.
PCI_TREE = "PCI tree"
INVENTORY = "GPU driver inventory"
DRIVER_PROC = "driver proc files"
LSPCI = "lspci"
NVLINK = "nvidia-smi nvlink"
TOPO = "nvidia-smi topo"
KERNEL_LOG = "kernel log"
# nvidia-smi's own words when the driver is installed but not answering (no module, a GPU
# the driver failed to initialise): the GPU is there, the driver is not.
NO_DRIVER = "couldn't communicate with the nvidia driver"
# Kernel-log events that name a GPU by bus id (the NVRM lines; AER names any device).
GPU_EVENTS = frozenset({"xid", "fell_off_bus"})


@frozen
class SeenGpu:
    """One GPU some source shows, by bus id, and the sources that show it."""

    bus: BusId
    sources: tuple[str, ...]


@frozen
class GpuFacts:
    """What a host says about its NVIDIA GPUs. Keys of ``nvlinks``/``nvlink_notes`` are
    ``Gpu.subject`` (``gpu:<bus id as printed>``)."""

    present: bool = False
    pci_gpus: tuple[str, ...] = ()  # NVIDIA VGA/3D functions in sysfs: 0000:9b:00.0
    inventory: GpuInventory = field(default_factory=GpuInventory)
    gpus: tuple[Gpu, ...] = ()
    nvlinks: Mapping[str, tuple[NvLink, ...]] = field(default_factory=dict)
    nvlink_notes: Mapping[str, str] = field(default_factory=dict)
    # GPUs known only from ``nvidia-smi nvlink -s`` (position, name, UUID): a bundle that
    # holds that output alone still shows their links.
    nvlink_gpus: tuple[Gpu, ...] = ()
    # GPUs an lspci -vvv (read where the bundle has no PCI tree) shows bound to the nvidia
    # driver ("Kernel driver in use: nvidia"): the module is loaded, whatever else is absent.
    nvidia_bound: tuple[str, ...] = ()
    driver_version: str | None = None
    cuda_version: str | None = None
    source: str = "none"  # nvml | nvidia-smi | none
    error: str | None = None  # why the inventory could not be read
    # Every GPU some source shows, by bus id, and the sources that show it (module docstring).
    seen: tuple[SeenGpu, ...] = ()
    unnamed: Mapping[str, int] = field(default_factory=dict)  # source -> GPUs without bus id
    sources: Mapping[str, str] = field(default_factory=dict)  # source -> READ or why not
    unread: Mapping[str, str] = field(default_factory=dict)

    @property
    def count(self) -> int:
        """How many GPUs the sources show: the named ones, else the most a source counts."""
        return max([len(self.seen), *self.unnamed.values()])

    @property
    def pci_gpus_missing_from_driver(self) -> tuple[str, ...]:
        """GPUs on the PCI bus that the driver does not list (empty if it listed none)."""
        if not self.gpus:
            return ()
        listed = {g.pci_address for g in self.gpus}
        return tuple(bdf for bdf in self.pci_gpus if bdf not in listed)


def is_nvidia_gpu(vendor: str | None, pci_class: str | None) -> bool:
    """Whether sysfs ``vendor`` and ``class`` (``0x10de``, ``0x030200``) name an NVIDIA GPU
    (``facts.pci``'s rule, on the two files alone)."""
    try:
        vendor_id, class_code = int(vendor or "", 16), int(pci_class or "", 16)
    except ValueError:
        return False
    return f"{vendor_id:04x}" == NVIDIA and f"{class_code >> 8:04x}" in GPU_CLASSES


def collect(host: Host) -> GpuFacts:
    """GPU facts of ``host``: every source that can show a GPU, ``host.gpus`` and NVLinks."""
    unread: dict[str, str] = {}
    sources: dict[str, str] = {}
    seen: dict[BusId, list[str]] = {}
    unnamed: dict[str, int] = {}
    pci_gpus, why = _pci_gpus(host)
    if why:
        unread["pci_gpus"] = why
    sources[PCI_TREE] = why or READ
    _add(seen, PCI_TREE, pci_gpus)
    inv = host.gpus
    if inv.error:
        unread["gpus"] = inv.error
    sources[INVENTORY] = READ if inv.gpus or not inv.error else inv.error
    _add(seen, INVENTORY, (g.pci_address for g in inv.gpus))
    _inventory_traces(host, inv, seen, unnamed, pci_read=not why)
    for key in ("driver_version", "cuda_version"):
        if getattr(inv, key) is None:
            unread[key] = inv.unread.get(key) or inv.error or "missing"
    sources[DRIVER_PROC] = _driver_proc(host, seen)
    bound: list[str] = []
    if why:  # no PCI tree: lspci is the bus's other witness (on a live host sysfs is there)
        sources[LSPCI] = _lspci(host, seen, bound)
        sources[TOPO] = _topo(host, unnamed)
    nvlink_gpus: list[Gpu] = []
    nvlinks, notes, sources[NVLINK] = _nvlinks(host, inv.gpus, unread, nvlink_gpus)
    if nvlink_gpus:
        unnamed[NVLINK] = len(nvlink_gpus)
    return GpuFacts(
        present=bool(seen or any(unnamed.values())),
        pci_gpus=pci_gpus,
        inventory=inv,
        gpus=inv.gpus,
        nvlinks=nvlinks,
        nvlink_notes=notes,
        nvlink_gpus=tuple(nvlink_gpus),
        nvidia_bound=tuple(bound),
        driver_version=inv.driver_version,
        cuda_version=inv.cuda_version,
        source=inv.source,
        error=inv.error,
        seen=tuple(SeenGpu(bus, tuple(names)) for bus, names in sorted(seen.items())),
        unnamed=unnamed,
        sources=sources,
        unread=unread,
    )


def seen_with_log(
    gpu: GpuFacts, log: KernelLogFacts | None
) -> tuple[dict[BusId, tuple[str, ...]], str]:
    """The GPUs of ``gpu.seen`` joined with those the kernel log's NVRM lines name, and the
    kernel log's own entry for ``sources`` (READ, or why it was not read)."""
    seen = {g.bus: list(g.sources) for g in gpu.seen}
    if log is None:
        return {b: tuple(n) for b, n in seen.items()}, "not collected"
    if log.events is None:
        why = log.unread.get("events", "unreadable")
        return {b: tuple(n) for b, n in seen.items()}, why
    _add(seen, KERNEL_LOG, (e.bus_id for e in log.events if e.kind in GPU_EVENTS))
    _add(seen, KERNEL_LOG, log.driver_gpus)
    return {b: tuple(n) for b, n in sorted(seen.items())}, READ


def _add(seen: dict[BusId, list[str]], source: str, bus_ids: Iterable[str | None]) -> None:
    for text in bus_ids:
        bus = BusId.parse(text)
        if bus is not None and source not in seen.setdefault(bus, []):
            seen[bus].append(source)


_XML_GPU = pattern(r'<gpu id="([^"]+)"')
_XML_ATTACHED = pattern(r"<attached_gpus>\s*(\d+)\s*</attached_gpus>")


def parse_xml_gpu_ids(text: str) -> tuple[tuple[str, ...], int]:
    """The bus ids of the ``<gpu id="...">`` elements of a ``nvidia-smi -q -x`` document, cut
    or whole, and its ``<attached_gpus>`` count (0 when absent): a truncated document still
    shows the driver answered for those GPUs."""
    attached = _XML_ATTACHED.search(text)
    return tuple(_XML_GPU.findall(text)), int(attached[1]) if attached else 0


def _inventory_traces(
    host: Host,
    inv: GpuInventory,
    seen: dict[BusId, list[str]],
    unnamed: dict[str, int],
    pci_read: bool,
) -> None:
    """What an inventory that failed still shows: the ``<gpu id>`` of a cut XML, or
    nvidia-smi's "couldn't communicate with the driver" (a driver installed for a GPU; a
    PCI tree read that shows no NVIDIA GPU outweighs it)."""
    if inv.gpus or not inv.error:
        return
    if inv.error.startswith("malformed") and host.kind != "live":  # a re-read of a file
        res = host.run(XML_ARGV)
        ids, attached = parse_xml_gpu_ids(res.stdout)
        _add(seen, INVENTORY, ids)
        if attached and not ids:
            unnamed[INVENTORY] = attached
    elif NO_DRIVER in inv.error.lower() and not pci_read:
        unnamed[INVENTORY] = 1


def _driver_proc(host: Host, seen: dict[BusId, list[str]]) -> str:
    """``proc/driver/nvidia/gpus/<bus id>/``: one folder per GPU the loaded driver knows."""
    if not host.is_dir(PROC_GPUS):
        return absent(host, PROC_GPUS)
    _add(seen, DRIVER_PROC, host.listdir(PROC_GPUS))
    return READ


def _lspci(host: Host, seen: dict[BusId, list[str]], bound: list[str]) -> str:
    """The GPUs an lspci listing shows (into ``seen``), those bound to nvidia (``bound``)."""
    res = host.run(LSPCI_ARGV, timeout=30)
    unheld = (RunStatus.UNRECORDED, RunStatus.MISSING)
    if res.status in unheld and host.kind != "live":
        for argv in LSPCI_FALLBACKS:
            other = host.run(argv, timeout=30)
            if other.status not in unheld:
                res = other
                break
    if not res.stdout.strip():  # READ only for a listing: no lspci says nothing of the bus
        return res.failure() if not res.ok else "malformed: empty lspci -vvv output"
    gpus = [d for d in parse_lspci_vvv(res.stdout) if is_gpu(d)]
    _add(seen, LSPCI, (d.bdf for d in gpus))
    bound.extend(d.bdf for d in gpus if d.driver == "nvidia")
    # The GPUs a cut listing shows are there; the ones after the cut are unknown, so the
    # source is not READ and "no GPU" is no verdict (issue 8).
    return lspci_cut(res.stdout) or READ


def _topo(host: Host, unnamed: dict[str, int]) -> str:
    """``nvidia-smi topo -m`` names each GPU the driver enumerates (``GPU0``..): a bundle
    that holds the matrix alone shows that many GPUs, without their bus ids."""
    from dolmen.facts.topology import ARGV, TIMEOUT, parse_topo
    from dolmen.facts.topology.model import is_gpu_label

    res = host.run(list(ARGV), timeout=TIMEOUT)
    if res.status is not RunStatus.OK:
        return res.failure()
    matrix, _ = parse_topo(res.stdout)
    # The header names the GPUs; a header with no row read under it is no matrix.
    count = len([d for d in matrix.devices if is_gpu_label(d)]) if matrix and matrix.paths else 0
    if not count:
        return "malformed: no GPU in the nvidia-smi topo -m matrix"
    unnamed[TOPO] = count
    return READ


def _pci_gpus(host: Host) -> tuple[tuple[str, ...], str]:
    base = PCI_DEVICES
    if not host.is_dir(base):
        why = absent(host, base)
        return (), why if unrecorded(why) else f"{why} is absent"
    found = []
    for name in host.listdir(base):
        vendor = host.read_value(f"{base}/{name}/vendor")
        # Only NVIDIA functions cost a second read: hosts have hundreds of PCI functions.
        if (
            vendor is not None
            and vendor.lower() == "0x10de"
            and is_nvidia_gpu(vendor, host.read_value(f"{base}/{name}/class"))
        ):
            parsed = BusId.parse(name)
            found.append(parsed.sysfs if parsed else name)
    return tuple(sorted(found)), ""


def _nvlinks(
    host: Host, gpus: Sequence[Gpu], unread: dict[str, str], only_here: list[Gpu]
) -> tuple[dict[str, tuple[NvLink, ...]], dict[str, str], str]:
    """Links per GPU subject, notes, and the source's entry for ``sources``; the GPUs that
    only the nvlink output shows are appended to ``only_here``."""
    if gpus and all(g.nvlinks is not None for g in gpus):  # NVML read them
        return {g.subject: g.nvlinks or () for g in gpus}, {}, READ
    if not gpus and host.kind == "live":  # no GPU listed here: nvidia-smi nvlink adds nothing
        return {}, {}, "missing: not run (the driver lists no GPU)"
    res = host.run(NVLINK_ARGV, timeout=NVLINK_TIMEOUT)
    if not res.ok and not (res.status is RunStatus.FAILED and "GPU " in res.stdout):
        # A bundle may hold DCGM's view instead (gpuId = NVML index = position).
        dcgm = host.run(DCGMI_ARGV, timeout=5) if host.kind != "live" else None
        reports = parse_dcgmi_link_status(dcgm.stdout) if dcgm is not None and dcgm.ok else ()
        if not reports:
            if gpus:
                unread["nvlinks"] = res.failure()
            return {}, {}, res.failure()
    else:
        reports = parse_nvlink_status(res.stdout)
    if not gpus:
        # The bundle's nvlink output alone: its GPUs are known by position and UUID.
        only_here.extend(Gpu(position=r.position, name=r.name, uuid=r.uuid) for r in reports)
        gpus = only_here
    by_uuid = {r.uuid: r for r in reports if r.uuid}
    by_position = {r.position: r for r in reports}
    nvlinks: dict[str, tuple[NvLink, ...]] = {}
    notes: dict[str, str] = {}
    for g in gpus:
        report = (by_uuid.get(g.uuid) if g.uuid else None) or by_position.get(g.position)
        nvlinks[g.subject] = report.links if report else ()
        if report and report.note:
            notes[g.subject] = report.note
    return nvlinks, notes, READ
