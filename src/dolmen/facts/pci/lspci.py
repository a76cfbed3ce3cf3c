"""The ``lspci -vvv`` text parser: PCI devices from a support bundle or where sysfs lacks links.

One block per function, separated by blank lines::

    19:00.0 3D controller: NVIDIA Corporation Device 2330 (rev a1)
    \tSubsystem: NVIDIA Corporation Device 16c1
    \tNUMA node: 0
    \t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM L1, Exit Latency L1 <4us
    \t\tLnkSta:\tSpeed 16GT/s (downgraded), Width x16 (ok)
    \tKernel driver in use: nvidia

The domain is printed only with ``-D`` or when a machine has more than one
(GB200 spans 0000-0019); without it the domain is 0000. A bridge's block says which
buses lie behind it (``Bus: primary=16, secondary=17, subordinate=1c``): a function on
bus 17 of that domain has that bridge as its parent, which is how the PCI tree (PCIe
switches, root ports) is read back from lspci alone; a function on a bus no bridge
leads to sits on a root bus (a host bridge). With ``-nn`` the header
carries ``[0302]`` and ``[10de:2330]``. Without root the capabilities read
``<access denied>`` and there are no link lines.

Plain ``lspci`` and ``lspci -vvv`` print names, not ids (``3D controller: NVIDIA
Corporation Device 2330``): the class and vendor ids are then read back from the names
of the PCI ID database (pci.ids) for the classes and vendors dolmen judges, and the
device id from pci.ids' fallback name ``Device 2330`` (printed when the database does
not know the device). A name outside the tables leaves the id None: never a guess.

A listing cut short (``head -200``, a paste that stopped) lists some devices, not all, so
it cannot show that a device is absent: :func:`lspci_cut` says when it is. ``lspci -vvv``
ends every block, the last one included, with a blank line, and prints a block's
``Kernel driver in use`` / ``Kernel modules`` lines last; a last block that ends with
neither (a paste may lose the final blank line, never the block's last line) was cut. The
one-line formats (plain, ``-nn``) show a cut only mid-line: a last header that stops
before its ``class: name``.
"""

from __future__ import annotations

from dataclasses import replace

from dolmen.facts.pci.model import PciDevice, PciLink, make_link
from dolmen.frozen.regex import pattern
from dolmen.values.busid import BusId

_HEADER = pattern(
    r"(?:(?P<domain>[0-9a-f]{4,8}):)?(?P<bus>[0-9a-f]{2}):(?P<slot>[0-9a-f]{2})\.(?P<fn>[0-7])"
    r" (?P<cls>[^:\[]+?)(?: \[(?P<clsid>[0-9a-f]{4})\])?: (?P<desc>.*)"
)
_HEADER_START = pattern(r"(?:[0-9a-f]{4,8}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
# The lines lspci -vvv prints last in a block (-k, which -v implies): a block that ends
# with one of them is whole even where the final blank line was lost.
_BLOCK_ENDS = frozenset({"Kernel driver in use", "Kernel modules"})
_IDS_SUFFIX = pattern(r"\s*\[[0-9a-f]{4}:[0-9a-f]{4}\]")
_REV_SUFFIX = pattern(r"\s*\((?:rev|prog-if) [^)]*\)")

# pci.ids class names -> base class + subclass, for the names lspci prints without -nn.
CLASS_IDS = {
    "Non-Volatile memory controller": "0108",
    "RAID bus controller": "0104",
    "SATA controller": "0106",
    "Serial Attached SCSI controller": "0107",
    "Ethernet controller": "0200",
    "Infiniband controller": "0207",
    "Network controller": "0280",
    "VGA compatible controller": "0300",
    "3D controller": "0302",
    "Display controller": "0380",
    "Host bridge": "0600",
    "PCI bridge": "0604",
    "Bridge": "0680",
    "System peripheral": "0880",
    "USB controller": "0c03",
    "Processing accelerators": "1200",
}
# pci.ids vendor names -> vendor ids, for the vendors whose devices dolmen judges.
VENDOR_IDS = {
    "NVIDIA Corporation": "10de",
    "Mellanox Technologies": "15b3",
    "Intel Corporation": "8086",
    "Advanced Micro Devices, Inc. [AMD/ATI]": "1002",
    "Advanced Micro Devices, Inc. [AMD]": "1022",
    "Broadcom Inc. and subsidiaries": "14e4",
    "Samsung Electronics Co Ltd": "144d",
}
_UNNAMED_DEVICE = pattern(r"\bDevice ([0-9a-f]{4})\b")
_IDS = pattern(r"\[([0-9a-f]{4}):([0-9a-f]{4})\]")
_SPEED = pattern(r"Speed (\d+(?:\.\d+)?)GT/s")
_WIDTH = pattern(r"Width x(\d+)")
_SECONDARY = pattern(r"\bsecondary=([0-9a-f]{2})\b")


def parse_lspci_vvv(text: str) -> list[PciDevice]:
    """Every device block of ``lspci -vvv`` (optionally ``-nn``, ``-D``); junk lines are skipped.

    Each device's ``parent`` is the bridge whose secondary bus (its ``Bus: primary=..,
    secondary=..`` line) the device sits on, in the same domain: lspci -vvv does not print
    the tree, but the bridges' bus numbers are it. None where no listed bridge claims the
    bus (a root bus, or a listing cut before that bridge)."""
    found: list[tuple[PciDevice, int | None]] = []
    block: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.strip():
            if not line[0].isspace() and block:  # a header without a blank line before it
                found.extend(_device(block))
                block = []
            block.append(line)
        elif block:
            found.extend(_device(block))
            block = []
    bridges: dict[tuple[int, int], str] = {}
    for dev, secondary in found:
        bus = BusId.parse(dev.bdf)
        if bus is not None and secondary is not None:
            bridges.setdefault((bus.domain, secondary), dev.bdf)  # the first claim stands
    out = []
    for dev, _ in found:
        bus = BusId.parse(dev.bdf)
        parent = bridges.get((bus.domain, bus.bus)) if bus is not None else None
        out.append(replace(dev, parent=parent) if parent and parent != dev.bdf else dev)
    return out


def lspci_cut(text: str) -> str | None:
    """``cut off: ...`` when the listing ends before its last block does (see the module
    docstring), else None: a whole listing, or one that has no device at all."""
    lines = text.rstrip(" \t\r").splitlines()
    if not lines or not lines[-1].strip():
        return None  # ends with the blank line lspci -vvv closes every block with
    last = lines[-1]
    if not last[0].isspace():  # a header: of a -vvv block (whose lines follow) or a line
        head = _HEADER_START.match(last)
        if head is None:
            return None
        vvv = any(ln[:1].isspace() for ln in lines)
        if vvv or _HEADER.fullmatch(last.strip()) is None:
            where = "block" if vvv else "line"
            return f"cut off: the listing ends inside {head.group(0)}'s {where}"
        return None
    if last.strip().partition(":")[0] in _BLOCK_ENDS:
        return None
    header = next((ln for ln in reversed(lines) if ln[:1].strip()), "")
    return f"cut off: the listing ends inside {header.partition(' ')[0] or '?'}'s block"


def _device(lines: list[str]) -> list[tuple[PciDevice, int | None]]:
    m = _HEADER.fullmatch(lines[0].strip())
    if m is None:
        return []
    bus = BusId.parse(m.group(0).partition(" ")[0])
    if bus is None:  # the header matched, so only a device number above 31 lands here
        return []
    bdf = bus.sysfs
    desc = m.group("desc")
    ids = _IDS.search(desc)
    vendor_id = device_id = None
    class_id = m.group("clsid") or CLASS_IDS.get(m.group("cls"))
    if ids:
        vendor_id, device_id = ids.groups()
    else:
        vendor_id, device_id = _named_ids(desc)
    name = _IDS_SUFFIX.sub("", desc)
    name = _REV_SUFFIX.sub("", name).strip()

    driver = numa = secondary = None
    cap = sta = None
    sub_vendor = sub_device = None
    for raw in lines[1:]:
        line = raw.strip()
        key, _, value = line.partition(":")
        value = value.strip()
        if key == "Kernel driver in use":
            driver = value
        elif key == "NUMA node" and value.lstrip("-").isdigit():
            numa = int(value)
        elif key == "LnkCap":
            cap = value
        elif key == "LnkSta":
            sta = value
        elif key == "Subsystem":
            sids = _IDS.search(value)
            sub_vendor, sub_device = sids.groups() if sids else _named_ids(value)
        elif key == "Bus" and (bus_m := _SECONDARY.search(value)):
            secondary = int(bus_m.group(1), 16)
    return [
        (
            PciDevice(
                bdf=bdf,
                vendor_id=vendor_id,
                device_id=device_id,
                class_id=class_id,
                subsystem_vendor_id=sub_vendor,
                subsystem_device_id=sub_device,
                driver=driver,
                numa_node=numa,
                current_link=_link(sta),
                max_link=_link(cap),
                description=f"{m.group('cls')}: {name}",
                source="lspci",
            ),
            secondary,
        )
    ]


def _named_ids(desc: str) -> tuple[str | None, str | None]:
    """(vendor id, device id) from the names plain lspci prints (see module docstring)."""
    vendor = next((v for name, v in VENDOR_IDS.items() if desc.startswith(name + " ")), None)
    if vendor is None:
        return None, None
    unnamed = _UNNAMED_DEVICE.search(desc)
    return vendor, unnamed.group(1) if unnamed else None


def _link(text: str | None) -> PciLink | None:
    if text is None:
        return None
    speed = _SPEED.search(text)
    width = _WIDTH.search(text)
    return make_link(
        float(speed.group(1)) if speed else None, int(width.group(1)) if width else None
    )
