"""GPU facts: the driver's inventory (``host.gpus``), NVIDIA GPUs on the PCI bus, NVLinks.

``present`` is true when an NVIDIA display or 3D controller is on the PCI bus or
the driver lists a GPU, so "driver missing but GPU present" and "GPU fell off
the bus" (on the bus, not in the inventory) stay visible to checks. NVLink
state comes from NVML on a live host, else from one ``nvidia-smi nvlink -s``,
run only when the inventory lists GPUs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import field

from dolmen.frozen import frozen
from dolmen.host import Host, RunStatus
from dolmen.host.gpu import NOT_SUPPORTED, Gpu, GpuInventory, NvLink
from dolmen.values.busid import BusId

NVIDIA_VENDOR = 0x10DE
# PCI class codes (base class, subclass): 03 00 VGA controller, 03 02 3D controller.
# NVSwitches (06 80) and the audio function of a board (04 03) are not GPUs.
GPU_CLASSES = frozenset({0x0300, 0x0302})
NVLINK_ARGV = ("nvidia-smi", "nvlink", "-s")
NVLINK_TIMEOUT = 30.0


@frozen
class NvlinkGpu:
    """One GPU's block in ``nvidia-smi nvlink -s``."""

    position: int  # "GPU <n>:" (the NVML index, the order of ``nvidia-smi -q -x``)
    name: str | None = None
    uuid: str | None = None
    links: tuple[NvLink, ...] = ()
    note: str | None = None  # "all links inactive", "not supported"


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
    driver_version: str | None = None
    cuda_version: str | None = None
    source: str = "none"  # nvml | nvidia-smi | none
    error: str | None = None  # why the inventory could not be read
    unread: Mapping[str, str] = field(default_factory=dict)

    @property
    def pci_gpus_missing_from_driver(self) -> tuple[str, ...]:
        """GPUs on the PCI bus that the driver does not list (empty if it listed none)."""
        if not self.gpus:
            return ()
        listed = {g.pci_address for g in self.gpus}
        return tuple(bdf for bdf in self.pci_gpus if bdf not in listed)


def is_nvidia_gpu(vendor: str | None, pci_class: str | None) -> bool:
    """Whether sysfs ``vendor`` and ``class`` (``0x10de``, ``0x030200``) name an NVIDIA GPU."""
    try:
        vendor_id, class_code = int(vendor or "", 16), int(pci_class or "", 16)
    except ValueError:
        return False
    return vendor_id == NVIDIA_VENDOR and class_code >> 8 in GPU_CLASSES


_GPU_LINE = re.compile(r"^GPU (\d+): (.*?)(?: \(UUID: ([^)]*)\))?\s*$")
_LINK_LINE = re.compile(r"^\s*Link (\d+): (.*?)\s*$")
_SPEED = re.compile(r"^(\d+(?:\.\d+)?) GB/s$")


def parse_nvlink_status(text: str) -> tuple[NvlinkGpu, ...]:
    """``nvidia-smi nvlink -s``: per GPU, each link's state and speed (``Link 0: 25 GB/s``,
    ``Link 3: <inactive>``), or the line saying why there are none. Unknown lines are ignored;
    empty output (a board without NVLink) gives no GPUs."""
    blocks: list[tuple[re.Match[str], list[str]]] = []
    for line in text.splitlines():
        if m := _GPU_LINE.match(line):
            blocks.append((m, []))
        elif blocks:
            blocks[-1][1].append(line)
    return tuple(_block(head, lines) for head, lines in blocks)


def _block(head: re.Match[str], lines: list[str]) -> NvlinkGpu:
    links: list[NvLink] = []
    note = None
    for line in lines:
        lower = line.lower()
        if m := _LINK_LINE.match(line):
            speed = _SPEED.match(m[2])
            if speed:
                links.append(NvLink(int(m[1]), "up", float(speed[1])))
            else:
                state = "inactive" if "inactive" in m[2].lower() else "down"
                links.append(NvLink(int(m[1]), state))
        elif "all links are inactive" in lower:  # "NVML: Unable to retrieve NVLink ..."
            note = "all links inactive"
        elif "does not have or support nvlink" in lower:
            note = NOT_SUPPORTED
    return NvlinkGpu(int(head[1]), head[2], head[3], tuple(links), note)


def collect(host: Host) -> GpuFacts:
    """GPU facts of ``host``: sysfs PCI functions, ``host.gpus`` and the NVLinks."""
    unread: dict[str, str] = {}
    pci_gpus, why = _pci_gpus(host)
    if why:
        unread["pci_gpus"] = why
    inv = host.gpus
    if inv.error:
        unread["gpus"] = inv.error
    for key in ("driver_version", "cuda_version"):
        if getattr(inv, key) is None:
            unread[key] = inv.unread.get(key) or inv.error or "missing"
    nvlinks, notes = _nvlinks(host, inv.gpus, unread)
    return GpuFacts(
        present=bool(pci_gpus or inv.gpus),
        pci_gpus=pci_gpus,
        inventory=inv,
        gpus=inv.gpus,
        nvlinks=nvlinks,
        nvlink_notes=notes,
        driver_version=inv.driver_version,
        cuda_version=inv.cuda_version,
        source=inv.source,
        error=inv.error,
        unread=unread,
    )


def _pci_gpus(host: Host) -> tuple[tuple[str, ...], str]:
    base = "sys/bus/pci/devices"
    if not host.is_dir(base):
        return (), f"missing: {base} is absent"
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
    host: Host, gpus: Sequence[Gpu], unread: dict[str, str]
) -> tuple[dict[str, tuple[NvLink, ...]], dict[str, str]]:
    if not gpus:
        return {}, {}
    if all(g.nvlinks is not None for g in gpus):  # NVML read them
        return {g.subject: g.nvlinks or () for g in gpus}, {}
    res = host.run(NVLINK_ARGV, timeout=NVLINK_TIMEOUT)
    if not res.ok and not (res.status is RunStatus.FAILED and "GPU " in res.stdout):
        unread["nvlinks"] = res.failure()
        return {}, {}
    reports = parse_nvlink_status(res.stdout)
    by_uuid = {r.uuid: r for r in reports if r.uuid}
    by_position = {r.position: r for r in reports}
    nvlinks: dict[str, tuple[NvLink, ...]] = {}
    notes: dict[str, str] = {}
    for g in gpus:
        report = (by_uuid.get(g.uuid) if g.uuid else None) or by_position.get(g.position)
        nvlinks[g.subject] = report.links if report else ()
        if report and report.note:
            notes[g.subject] = report.note
    return nvlinks, notes
