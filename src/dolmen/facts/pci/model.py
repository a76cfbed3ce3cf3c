"""The PCI model: devices with ids, driver, NUMA node, PCIe links and AER counters.

Built by both sources (``sysfs``, ``lspci``); ``make_link`` fills a link's
generation from its per-lane rate the same way for both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from dolmen.frozen import frozen

# PCIe transfer rate per lane (GT/s) -> generation (PCI-SIG base specifications 1.0-6.0).
GENERATIONS: Mapping[float, int] = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
NVIDIA = "10de"
# The PCI classes (base class, subclass) of a GPU, with the names lspci prints without -nn:
# 03 00 VGA controller (workstation boards), 03 02 3D controller (data-center boards), the
# two NVIDIA's go-nvlib (nvpci) counts as GPUs. NVSwitches (06 80) and the audio function
# of a board (04 03) are not GPUs.
GPU_CLASSES: Mapping[str, str] = {"0300": "VGA compatible controller", "0302": "3D controller"}


@frozen
class PciLink:
    """A PCIe link state: per-lane rate, generation derived from it, lane count."""

    speed_gts: float | None
    width: int | None
    generation: int | None = None


@frozen
class AerCounters:
    """Advanced Error Reporting counters since boot, per error kind (``RxErr``, ``BadTLP``...)."""

    correctable: Mapping[str, int] = field(default_factory=dict)
    fatal: Mapping[str, int] = field(default_factory=dict)
    nonfatal: Mapping[str, int] = field(default_factory=dict)
    total_correctable: int | None = None  # TOTAL_ERR_COR
    total_fatal: int | None = None  # TOTAL_ERR_FATAL
    total_nonfatal: int | None = None  # TOTAL_ERR_NONFATAL


@frozen
class PciDevice:
    """One PCI function. Ids are lowercase hex without ``0x`` (vendor ``10de``, class ``0302``)."""

    bdf: str  # domain:bus:device.function, 0000:19:00.0
    vendor_id: str | None = None
    device_id: str | None = None
    class_id: str | None = None  # base class + subclass: 0302 3D, 0207 InfiniBand, 0108 NVMe
    subsystem_vendor_id: str | None = None
    subsystem_device_id: str | None = None
    driver: str | None = None  # None: no driver bound
    numa_node: int | None = None  # -1: the firmware gives no NUMA affinity
    current_link: PciLink | None = None
    max_link: PciLink | None = None
    aer: AerCounters | None = None
    parent: str | None = None  # upstream bridge; None on a root bus
    local_cpus: tuple[int, ...] | None = None
    description: str | None = None  # lspci's class and device names, when lspci was read
    source: str = "sysfs"  # sysfs, lspci, or sysfs+lspci (sysfs lacked the link)

    @property
    def link_downgraded(self) -> bool | None:
        """Whether the link runs below its maximum speed or width; None when unknown."""
        cur, top = self.current_link, self.max_link
        if cur is None or top is None:
            return None
        pairs = [(cur.speed_gts, top.speed_gts), (cur.width, top.width)]
        known = [(c, t) for c, t in pairs if c is not None and t is not None]
        return any(c < t for c, t in known) if known else None


@frozen
class PciFacts:
    """Every PCI function of the host; ``unread`` keys are ``<bdf>.<field>`` or a source."""

    devices: tuple[PciDevice, ...]
    unread: Mapping[str, str] = field(default_factory=dict)

    def by_bdf(self) -> dict[str, PciDevice]:
        """Devices keyed by their bus id."""
        return {d.bdf: d for d in self.devices}


def make_link(speed: float | None, width: int | None) -> PciLink | None:
    """A link from its parts (None when both are unknown), with the generation filled in."""
    if speed is None and width is None:
        return None
    return PciLink(speed, width, GENERATIONS.get(speed) if speed is not None else None)


def is_gpu(d: PciDevice) -> bool:
    """Whether a PCI function is an NVIDIA GPU: by its ids, else (``lspci -vvv`` without
    ``-nn``, names it could not map) by lspci's words, ``3D controller: NVIDIA ...``."""
    if d.vendor_id is not None and d.class_id is not None:
        return d.vendor_id == NVIDIA and d.class_id in GPU_CLASSES
    kind, _, name = (d.description or "").partition(": ")
    return kind in GPU_CLASSES.values() and name.startswith("NVIDIA")
