"""``[pcie_power]``: runtime power management off on the PCI bridges above each NVIDIA GPU.

    [pcie_power]
    gpu_bridges = "on"

DGX OS's nvidia-pci-bridge-power writes ``on`` to ``power/control`` of the bridges
that are parents of the GPUs: with ``auto`` the kernel may suspend a bridge (D3) and
the GPU behind it falls off the bus or wakes slowly. The bridges are found from sysfs:
every function with vendor 0x10de and a display class (0x03xxxx) under
``/sys/bus/pci/devices``, and each PCI function on the path of its device link
(``../../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0``)
is a bridge above it. One kernel file per bridge: read, write, restore and the
tmpfiles.d line that writes it again at boot come from ``KernelFileSetting``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dolmen.host import Host
from dolmen.tune.model import Target
from dolmen.tune.settings.base import Entry, choice_error
from dolmen.tune.settings.kernel_file import KernelFileSetting
from dolmen.values.busid import sysfs_name

DEVICES = "sys/bus/pci/devices"
CHOICES = ("on", "auto")
NVIDIA = "0x10de"


def bridges_above(link: str) -> list[str]:
    """The PCI functions on a device link's path before the device itself, nearest last."""
    parts = [p for p in link.split("/") if sysfs_name(p) is not None]
    return parts[:-1]


def gpu_bridges(host: Host) -> list[tuple[str, str]]:
    """(bridge, the GPU below it) for every bridge above an NVIDIA display-class function."""
    found: dict[str, str] = {}
    for dev in host.glob(f"{DEVICES}/*"):
        vendor = host.read_value(f"{dev}/vendor")
        klass = host.read_value(f"{dev}/class") or ""
        if vendor != NVIDIA or not klass.startswith("0x03"):
            continue
        link = host.readlink(dev) or ""
        for bridge in bridges_above(link):
            found.setdefault(bridge, dev.rsplit("/", 1)[-1])
    return sorted(found.items())


class BridgePower(KernelFileSetting):
    """``power/control`` of the GPUs' parent bridges (module docstring)."""

    section = "pcie_power"
    keys = ("gpu_bridges",)
    title = "PCI bridge runtime power control above the GPUs"
    persists = False  # a sysfs value (tmpfiles.d brings it back when the profile persists)
    read_only_reason = "read-only here (the kernel refuses writes to it)"

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        if value not in CHOICES:
            raise choice_error(f"[pcie_power] {key}", value, CHOICES)
        return str(value)

    def targets(self, host: Host, entry: Entry) -> list[Target] | str:
        if not host.is_dir(DEVICES):
            return f"{host.absent(DEVICES)}: /{DEVICES}"
        pairs = gpu_bridges(host)
        if not pairs:
            return "no NVIDIA GPU behind a PCI bridge here"
        out = [
            Target(
                self.section,
                entry.key,
                f"{bridge} (above GPU {gpu}) power/control",
                entry.value,
                f"{DEVICES}/{bridge}/power/control",
                entry.origin,
                entry.source,
            )
            for bridge, gpu in pairs
            if host.exists(f"{DEVICES}/{bridge}/power/control")
        ]
        return out or "the GPUs' bridges have no power/control file (no runtime PM here)"
