"""The PCI bus id: one parser for every spelling the host prints, two canonical texts.

The same function is written differently by each source: sysfs and the kernel
``0000:38:00.0``, nvidia-smi ``00000000:38:00.0`` (an 8-digit domain, upper-case
hex), NVRM Xid lines ``PCI:0000:38:00`` (no function: the GPU's function 0),
lspci without ``-D`` ``38:00.0`` (domain 0). Parsed once into ``BusId``, they
compare as values; ``sysfs`` and ``nvsmi`` print the two forms outputs use.

A finding names a device by one subject, built here and nowhere else: a GPU is
``gpu:<bus id as nvidia-smi prints it>`` (``gpu:00000000:86:00.0``, whichever spelling
the source used), any other PCI function ``pci:<bus id as sysfs prints it>``
(``pci:0000:04:00.0``). ``parse_subject`` reads either back.
"""

from __future__ import annotations

import re
from functools import lru_cache

from dolmen.frozen import frozen
from dolmen.frozen.regex import pattern

# domain (1-8 hex digits; sysfs prints 4, more above 0xffff, e.g. VMD), bus, device,
# function (0-7; absent in NVRM's "PCI:dddd:bb:dd", which names function 0).
_SPELLING = pattern(
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


GPU_PREFIX = "gpu:"
PCI_PREFIX = "pci:"


def gpu_subject(
    bus: BusId | str | None = None, uuid: str | None = None, index: int | None = None
) -> str:
    """The one subject of a GPU: ``gpu:00000000:86:00.0`` from any spelling of its bus id;
    without one, its UUID (``nvidia-smi nvlink -s`` names GPUs so), else the bus id as printed
    when it does not parse, else its index (``GPU3`` of ``topo -m``, DCGM's GPU id)."""
    parsed = bus if isinstance(bus, BusId) else BusId.parse(bus)
    if parsed is not None:
        return GPU_PREFIX + parsed.nvsmi
    if uuid:
        return GPU_PREFIX + uuid
    if isinstance(bus, str) and bus.strip():
        return GPU_PREFIX + bus.strip()
    return f"{GPU_PREFIX}{index if index is not None else 'unknown'}"


def pci_subject(bus: BusId | str, *, gpu: bool = False) -> str:
    """The subject of a PCI function: ``gpu_subject`` for a GPU, else ``pci:0000:04:00.0``
    (sysfs's form; a text that is no bus id stays as printed)."""
    parsed = bus if isinstance(bus, BusId) else BusId.parse(bus)
    if gpu:
        return gpu_subject(parsed or bus)
    return PCI_PREFIX + (parsed.sysfs if parsed is not None else str(bus).strip())


def parse_subject(subject: str) -> BusId | None:
    """The bus id a ``gpu:`` or ``pci:`` subject names, else None (``host``, ``gpu:GPU-...``)."""
    kind, _, rest = subject.partition(":")
    return BusId.parse(rest) if kind in ("gpu", "pci") and rest else None


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
