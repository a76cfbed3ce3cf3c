"""The ``lspci -vvv`` text parser: PCI devices from a support bundle or where sysfs lacks links.

One block per function, separated by blank lines::

    19:00.0 3D controller: NVIDIA Corporation Device 2330 (rev a1)
    \tSubsystem: NVIDIA Corporation Device 16c1
    \tNUMA node: 0
    \t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM L1, Exit Latency L1 <4us
    \t\tLnkSta:\tSpeed 16GT/s (downgraded), Width x16 (ok)
    \tKernel driver in use: nvidia

The domain is printed only with ``-D`` or when a machine has more than one
(GB200 spans 0000-0019); without it the domain is 0000. With ``-nn`` the header
carries ``[0302]`` and ``[10de:2330]``. Without root the capabilities read
``<access denied>`` and there are no link lines.
"""

from __future__ import annotations

import re

from dolmen.facts.pci.model import PciDevice, PciLink, make_link
from dolmen.values.busid import BusId

_HEADER = re.compile(
    r"(?:(?P<domain>[0-9a-f]{4,8}):)?(?P<bus>[0-9a-f]{2}):(?P<slot>[0-9a-f]{2})\.(?P<fn>[0-7])"
    r" (?P<cls>[^:\[]+?)(?: \[(?P<clsid>[0-9a-f]{4})\])?: (?P<desc>.*)"
)
_IDS = re.compile(r"\[([0-9a-f]{4}):([0-9a-f]{4})\]")
_SPEED = re.compile(r"Speed (\d+(?:\.\d+)?)GT/s")
_WIDTH = re.compile(r"Width x(\d+)")


def parse_lspci_vvv(text: str) -> list[PciDevice]:
    """Every device block of ``lspci -vvv`` (optionally ``-nn``, ``-D``); junk lines are skipped."""
    devices: list[PciDevice] = []
    block: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.strip():
            if not line[0].isspace() and block:  # a header without a blank line before it
                devices.extend(_device(block))
                block = []
            block.append(line)
        elif block:
            devices.extend(_device(block))
            block = []
    return devices


def _device(lines: list[str]) -> list[PciDevice]:
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
    if ids:
        vendor_id, device_id = ids.groups()
    name = re.sub(r"\s*\[[0-9a-f]{4}:[0-9a-f]{4}\]", "", desc)
    name = re.sub(r"\s*\((?:rev|prog-if) [^)]*\)", "", name).strip()

    driver = numa = None
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
        elif key == "Subsystem" and (sids := _IDS.search(value)):
            sub_vendor, sub_device = sids.groups()
    return [
        PciDevice(
            bdf=bdf,
            vendor_id=vendor_id,
            device_id=device_id,
            class_id=m.group("clsid"),
            subsystem_vendor_id=sub_vendor,
            subsystem_device_id=sub_device,
            driver=driver,
            numa_node=numa,
            current_link=_link(sta),
            max_link=_link(cap),
            description=f"{m.group('cls')}: {name}",
            source="lspci",
        )
    ]


def _link(text: str | None) -> PciLink | None:
    if text is None:
        return None
    speed = _SPEED.search(text)
    width = _WIDTH.search(text)
    return make_link(
        float(speed.group(1)) if speed else None, int(width.group(1)) if width else None
    )
