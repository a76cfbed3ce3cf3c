"""The PCI bus id: one parser for every spelling the host prints, two canonical texts.

The same function is written differently by each source: sysfs and the kernel
``0000:38:00.0``, nvidia-smi ``00000000:38:00.0`` (an 8-digit domain, upper-case
hex), NVRM Xid lines ``PCI:0000:38:00`` (no function: the GPU's function 0),
lspci without ``-D`` ``38:00.0`` (domain 0). Parsed once into ``BusId``, they
compare as values; ``sysfs`` and ``nvsmi`` print the two forms outputs use.
"""

from __future__ import annotations

import re
from functools import lru_cache

from dolmen.frozen import frozen

# domain (1-8 hex digits; sysfs prints 4, more above 0xffff, e.g. VMD), bus, device,
# function (0-7; absent in NVRM's "PCI:dddd:bb:dd", which names function 0).
_SPELLING = re.compile(
    r"(?:pci:)?(?:(?P<domain>[0-9a-f]{1,8}):)?(?P<bus>[0-9a-f]{1,2}):(?P<device>[0-9a-f]{1,2})"
    r"(?:\.(?P<function>[0-7]))?",
    re.IGNORECASE,
)
_MAX_DEVICE = 0x1F  # 5 bits of devfn


@frozen(order=True)
class BusId:
    """One PCI function: domain, bus, device (0-31) and function (0-7)."""

    domain: int
    bus: int
    device: int
    function: int

    @staticmethod
    def parse(text: str | None) -> BusId | None:
        """Any spelling in the module docstring (any case, surrounding space); None if not one."""
        return _parse((text or "").strip())

    @property
    def sysfs(self) -> str:
        """``0000:38:00.0``: the kernel's and sysfs's form (lower case, 4-digit domain or more)."""
        return f"{self.domain:04x}:{self.bus:02x}:{self.device:02x}.{self.function}"

    @property
    def nvsmi(self) -> str:
        """``00000000:38:00.0``: nvidia-smi's form (8-digit domain, upper case)."""
        return f"{self.domain:08X}:{self.bus:02X}:{self.device:02X}.{self.function}"

    @property
    def slot(self) -> tuple[int, int, int]:
        """Domain, bus and device: the functions of one slot share its PCIe link."""
        return (self.domain, self.bus, self.device)

    def __str__(self) -> str:
        return self.sysfs


def sysfs_name(text: str) -> BusId | None:
    """The bus id when ``text`` is written exactly as sysfs names a device (``0000:19:00.0``),
    else None: tells a device's folder, in a listing or a link target, from ``pci0000:00``,
    ``net`` and the other entries around it."""
    bus = _parse(text)
    return bus if bus is not None and bus.sysfs == text else None


@lru_cache(maxsize=4096)  # a kernel log names the same few devices thousands of times
def _parse(text: str) -> BusId | None:
    m = _SPELLING.fullmatch(text)
    if m is None:
        return None
    device = int(m["device"], 16)
    if device > _MAX_DEVICE:
        return None
    return BusId(int(m["domain"] or "0", 16), int(m["bus"], 16), device, int(m["function"] or 0))
