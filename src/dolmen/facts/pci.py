"""PCI facts: every device on the bus with ids, driver, NUMA node, PCIe link, AER counters.

Source: ``sys/bus/pci/devices/<bdf>/`` and only the files needed: ``uevent`` (ids,
class, driver in one read; the separate ``vendor``/``device``/``class`` files where
a tree has no uevent), ``numa_node``, ``local_cpulist``,
``{current,max}_link_{speed,width}``, ``aer_dev_{correctable,fatal,nonfatal}``; the
parent bridge comes from the ``sys/bus/pci/devices/<bdf>`` link target
(``../../../devices/pci0000:00/0000:00:02.1/0000:01:00.0``). No recursive walk.

``lspci -vvv`` (tree key ``lspci%20-vvv``, parsed by ``dolmen.facts.pci_lspci``) is a
second source, run only when sysfs has no device or no device shows a link (an
old kernel, a support bundle holding lspci output alone). Without root, lspci
prints ``<access denied>`` instead of the link lines.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from dolmen.facts.reading import (
    malformed,
    parse_cpulist,
    parse_hex,
    parse_int,
    read_value,
)
from dolmen.host import Host

DEVICES = "sys/bus/pci/devices"

# PCIe transfer rate per lane (GT/s) -> generation (PCI-SIG base specifications 1.0-6.0).
GENERATIONS: Mapping[float, int] = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}

BDF = re.compile(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
_SPEED = re.compile(r"(\d+(?:\.\d+)?)\s*GT/s")
_AER_LINE = re.compile(r"^[ \t]*(\S+)[ \t]+(\d+)[ \t]*$", re.MULTILINE)
_AER_FILES = (
    ("correctable", "aer_dev_correctable"),
    ("fatal", "aer_dev_fatal"),
    ("nonfatal", "aer_dev_nonfatal"),
)


@dataclass(frozen=True)
class PciLink:
    """A PCIe link state: per-lane rate, generation derived from it, lane count."""

    speed_gts: float | None
    width: int | None
    generation: int | None = None


@dataclass(frozen=True)
class AerCounters:
    """Advanced Error Reporting counters since boot, per error kind (``RxErr``, ``BadTLP``...)."""

    correctable: Mapping[str, int] = field(default_factory=dict)
    fatal: Mapping[str, int] = field(default_factory=dict)
    nonfatal: Mapping[str, int] = field(default_factory=dict)
    total_correctable: int | None = None  # TOTAL_ERR_COR
    total_fatal: int | None = None  # TOTAL_ERR_FATAL
    total_nonfatal: int | None = None  # TOTAL_ERR_NONFATAL


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class PciFacts:
    """Every PCI function of the host; ``unread`` keys are ``<bdf>.<field>`` or a source."""

    devices: tuple[PciDevice, ...]
    unread: Mapping[str, str] = field(default_factory=dict)

    def by_bdf(self) -> dict[str, PciDevice]:
        """Devices keyed by their bus id."""
        return {d.bdf: d for d in self.devices}


def parse_link_speed(text: str) -> float | None:
    """``32.0 GT/s PCIe``, ``16 GT/s``, ``8GT/s`` -> GT/s; ``Unknown`` and junk -> None."""
    m = _SPEED.search(text)
    return float(m.group(1)) if m else None


def make_link(speed: float | None, width: int | None) -> PciLink | None:
    """A link from its parts (None when both are unknown), with the generation filled in."""
    if speed is None and width is None:
        return None
    return PciLink(speed, width, GENERATIONS.get(speed) if speed is not None else None)


def parse_aer(text: str) -> tuple[dict[str, int], int | None] | None:
    """An ``aer_dev_*`` file (``RxErr 0`` lines, then ``TOTAL_ERR_COR 2``): counters and total.

    Without a TOTAL line (kernels before 5.x printed none) the total is the sum.
    None when no line parses.
    """
    counters: dict[str, int] = {}
    total = None
    for name, count in _AER_LINE.findall(text):  # one regex pass: a DGX has ~1500 such files
        if name.startswith("TOTAL_ERR_"):
            total = int(count)
        else:
            counters[name] = int(count)
    if not counters and total is None:
        return None
    return counters, total if total is not None else sum(counters.values())


def parse_uevent(text: str) -> dict[str, str]:
    """A sysfs ``uevent`` file (``KEY=value`` lines)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, eq, value = line.partition("=")
        if eq:
            out[key.strip()] = value.strip()
    return out


def parent_from_link(target: str) -> str | None:
    """The upstream bridge in a device link target; None when the device is on a root bus."""
    parts = [p for p in target.split("/") if p and p not in (".", "..")]
    if len(parts) >= 2 and BDF.fullmatch(parts[-2]):
        return parts[-2]
    return None


def _hex4(value: int | None, digits: int = 4) -> str | None:
    return None if value is None else f"{value:0{digits}x}"


def read_device(host: Host, bdf: str, unread: dict[str, str]) -> PciDevice:
    """One device from its sysfs folder."""
    base = f"{DEVICES}/{bdf}"
    names = set(host.listdir(base))
    ids: dict[str, str | None] = {}
    ue = parse_uevent(read_value(host, f"{base}/uevent").text or "") if "uevent" in names else {}
    if "PCI_ID" in ue:
        vendor, _, device = ue["PCI_ID"].partition(":")
        ids["vendor_id"], ids["device_id"] = _hex4(parse_hex(vendor)), _hex4(parse_hex(device))
        svendor, _, sdevice = ue.get("PCI_SUBSYS_ID", "").partition(":")
        ids["subsystem_vendor_id"] = _hex4(parse_hex(svendor))
        ids["subsystem_device_id"] = _hex4(parse_hex(sdevice))
        cls = parse_hex(ue.get("PCI_CLASS"))
        ids["class_id"] = _hex4(cls >> 8 if cls is not None else None)
    else:
        for attr, fname in (
            ("vendor_id", "vendor"),
            ("device_id", "device"),
            ("subsystem_vendor_id", "subsystem_vendor"),
            ("subsystem_device_id", "subsystem_device"),
            ("class_id", "class"),
        ):
            r = read_value(host, f"{base}/{fname}")
            value = parse_hex(r.text)
            if attr == "class_id" and value is not None:
                value >>= 8  # 0x030200: drop the programming interface
            ids[attr] = _hex4(value)
            if value is None and attr in ("vendor_id", "device_id", "class_id"):
                unread[f"{bdf}.{attr}"] = r.reason or malformed(r.text or "")

    driver = ue.get("DRIVER")
    if driver is None:
        link = host.readlink(f"{base}/driver")
        driver = link.rsplit("/", 1)[-1] if link else None

    numa = _int(host, base, "numa_node", names, bdf, unread)
    cpus = None
    if "local_cpulist" in names:
        r = read_value(host, f"{base}/local_cpulist")
        cpus = parse_cpulist(r.text)
        if cpus is None:
            unread[f"{bdf}.local_cpus"] = r.reason or malformed(r.text or "")

    current = _link(host, base, "current", names, bdf, unread)
    top = _link(host, base, "max", names, bdf, unread)
    aer = _aer(host, base, names, bdf, unread)

    target = host.readlink(base)
    parent = parent_from_link(target) if target else None
    if target is None:
        unread[f"{bdf}.parent"] = "missing (the device entry is not a link in this tree)"

    return PciDevice(
        bdf=bdf,
        driver=driver,
        numa_node=numa,
        current_link=current,
        max_link=top,
        aer=aer,
        parent=parent,
        local_cpus=cpus,
        vendor_id=ids.get("vendor_id"),
        device_id=ids.get("device_id"),
        class_id=ids.get("class_id"),
        subsystem_vendor_id=ids.get("subsystem_vendor_id"),
        subsystem_device_id=ids.get("subsystem_device_id"),
    )


def _int(
    host: Host, base: str, fname: str, names: set[str], bdf: str, unread: dict[str, str]
) -> int | None:
    if fname not in names:
        unread[f"{bdf}.{fname}"] = "missing"
        return None
    r = read_value(host, f"{base}/{fname}")
    value = parse_int(r.text)
    if value is None:
        unread[f"{bdf}.{fname}"] = r.reason or malformed(r.text or "")
    return value


def _link(
    host: Host, base: str, which: str, names: set[str], bdf: str, unread: dict[str, str]
) -> PciLink | None:
    key = f"{bdf}.{which}_link"
    sname, wname = f"{which}_link_speed", f"{which}_link_width"
    if sname not in names and wname not in names:
        unread[key] = "not supported (no PCIe link: not an Express device, or an integrated one)"
        return None
    s = read_value(host, f"{base}/{sname}")
    w = read_value(host, f"{base}/{wname}")
    speed = parse_link_speed(s.text) if s.text is not None else None
    width = parse_int(w.text)
    link = make_link(speed, width)
    if link is None:
        unread[key] = s.reason or w.reason or malformed(f"{s.text} / {w.text}")
    return link


def _aer(
    host: Host, base: str, names: set[str], bdf: str, unread: dict[str, str]
) -> AerCounters | None:
    if not any(fname in names for _, fname in _AER_FILES):
        unread[f"{bdf}.aer"] = "not supported (no AER capability, or AER is off)"
        return None
    counters: dict[str, dict[str, int]] = {}
    totals: dict[str, int | None] = {}
    for kind, fname in _AER_FILES:
        r = read_value(host, f"{base}/{fname}")
        parsed = parse_aer(r.text) if r.text is not None else None
        if parsed is None:
            unread[f"{bdf}.aer.{kind}"] = r.reason or malformed(r.text or "")
            continue
        counters[kind], totals[kind] = parsed
    return AerCounters(
        correctable=counters.get("correctable", {}),
        fatal=counters.get("fatal", {}),
        nonfatal=counters.get("nonfatal", {}),
        total_correctable=totals.get("correctable"),
        total_fatal=totals.get("fatal"),
        total_nonfatal=totals.get("nonfatal"),
    )


def collect(host: Host) -> PciFacts:
    """Read and parse the PCI facts of ``host``."""
    unread: dict[str, str] = {}
    bdfs = [n for n in host.listdir(DEVICES) if BDF.fullmatch(n)]
    devices = [read_device(host, bdf, unread) for bdf in bdfs]
    if devices and any(d.current_link is not None for d in devices):
        return PciFacts(tuple(devices), unread)

    from dolmen.facts.pci_lspci import parse_lspci_vvv

    res = host.run(["lspci", "-vvv"], timeout=30)
    # lspci prints what it could before failing; keep it when there is any.
    listed = parse_lspci_vvv(res.stdout) if res.stdout.strip() else []
    if not res.ok:
        unread["lspci"] = res.failure()
    if not devices:
        if not listed:
            unread["devices"] = "missing (no sys/bus/pci/devices and no lspci output)"
        else:
            for gap in ("aer", "parent", "local_cpus"):
                unread[gap] = "not supported (devices listed by lspci -vvv only)"
        return PciFacts(tuple(listed), unread)
    by_bdf = {d.bdf: d for d in listed}
    merged = []
    for dev in devices:
        extra = by_bdf.get(dev.bdf)
        if extra is not None and (extra.current_link or extra.max_link):
            dev = replace(
                dev,
                current_link=extra.current_link,
                max_link=extra.max_link,
                description=extra.description,
                source="sysfs+lspci",
            )
            unread.pop(f"{dev.bdf}.current_link", None)
            unread.pop(f"{dev.bdf}.max_link", None)
        merged.append(dev)
    return PciFacts(tuple(merged), unread)
