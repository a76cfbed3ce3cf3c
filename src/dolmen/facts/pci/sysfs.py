"""PCI devices from ``sys/bus/pci/devices/<bdf>/``, reading only the files needed.

``uevent`` (ids, class, driver in one read; the separate ``vendor``/``device``/
``class`` files where a tree has no uevent), ``numa_node``, ``local_cpulist``,
``{current,max}_link_{speed,width}``, ``aer_dev_{correctable,fatal,nonfatal}``;
the parent bridge comes from the ``sys/bus/pci/devices/<bdf>`` link target
(``../../../devices/pci0000:00/0000:00:02.1/0000:01:00.0``). No recursive walk.
"""

from __future__ import annotations

import re

from dolmen.facts.pci.model import AerCounters, PciDevice, PciLink, make_link
from dolmen.facts.reading import malformed, parse_cpulist, parse_hex, parse_int, read_value
from dolmen.frozen.regex import pattern
from dolmen.host import Host
from dolmen.values.busid import sysfs_name

DEVICES = "sys/bus/pci/devices"

_SPEED = pattern(r"(\d+(?:\.\d+)?)\s*GT/s")
_AER_LINE = pattern(r"^[ \t]*(\S+)[ \t]+(\d+)[ \t]*$", re.MULTILINE | re.ASCII)
COUNTER_MAX = (1 << 64) - 1  # the kernel's AER counters are u64
_AER_FILES = (
    ("correctable", "aer_dev_correctable"),
    ("fatal", "aer_dev_fatal"),
    ("nonfatal", "aer_dev_nonfatal"),
)


def is_sysfs_name(name: str) -> bool:
    """Whether a name under ``sys/bus/pci/devices`` (or in a link target) is a bus id as
    sysfs writes it (``0000:19:00.0``), not a bus folder (``pci0000:00``) or other entry."""
    return sysfs_name(name) is not None


def parse_link_speed(text: str) -> float | None:
    """``32.0 GT/s PCIe``, ``16 GT/s``, ``8GT/s`` -> GT/s; ``Unknown`` and junk -> None."""
    m = _SPEED.search(text)
    return float(m.group(1)) if m else None


def parse_aer(text: str) -> tuple[dict[str, int], int | None] | None:
    """An ``aer_dev_*`` file (``RxErr 0`` lines, then ``TOTAL_ERR_COR 2``): counters and total.

    Without a TOTAL line (kernels before 5.x printed none) the total is the sum.
    None when no line parses.
    """
    counters: dict[str, int] = {}
    total = None
    lines = _AER_LINE.findall(text)  # one regex pass: a DGX has ~1500 such files
    body = [line for line in text.splitlines() if line.strip()]
    torn = 1 if body and len(body[-1].split()) == 1 else 0  # a read cut inside the last name
    if len(lines) != len(body) - torn:
        return None  # a line that is not "<name> <count>" (-5, 1.5, junk): not a zero
    for name, count in lines:
        if len(count) > 20 or int(count) > COUNTER_MAX:
            return None
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
    if len(parts) >= 2 and is_sysfs_name(parts[-2]):
        return parts[-2]
    return None


def _hex4(value: int | None, digits: int = 4) -> str | None:
    return None if value is None else f"{value:0{digits}x}"


def read_device(host: Host, bdf: str, unread: dict[str, str], *, aer: bool = True) -> PciDevice:
    """One device from its sysfs folder; ``aer=False`` leaves out the AER counters (the
    topology needs where a device sits, not its error counts)."""
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
    counters = _aer(host, base, names, bdf, unread) if aer else None

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
        aer=counters,
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
