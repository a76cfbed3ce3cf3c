"""Pure parsers of the CPU sources: ``proc/cpuinfo`` (x86 and arm64, whose cores are
named from the MIDR fields with lscpu's table), CPU number lists, the topology."""

from __future__ import annotations

from collections.abc import Mapping

from dolmen.facts.cpu.model import CpuInfo
from dolmen.facts.reading import parse_cpulist, parse_hex

# MIDR implementer codes -> vendor (lscpu-arm.c hw_implementer).
ARM_IMPLEMENTERS: Mapping[int, str] = {
    0x41: "ARM",
    0x42: "Broadcom",
    0x43: "Cavium",
    0x46: "Fujitsu",
    0x48: "HiSilicon",
    0x4E: "NVIDIA",
    0x50: "APM",
    0x51: "Qualcomm",
    0x61: "Apple",
    0xC0: "Ampere",
}

# (implementer, part) -> core name, for the cores found in servers and dev kits.
ARM_PARTS: Mapping[tuple[int, int], str] = {
    (0x41, 0xD03): "Cortex-A53",
    (0x41, 0xD07): "Cortex-A57",
    (0x41, 0xD08): "Cortex-A72",
    (0x41, 0xD0B): "Cortex-A76",
    (0x41, 0xD0C): "Neoverse-N1",  # Ampere Altra, AWS Graviton2
    (0x41, 0xD40): "Neoverse-V1",  # AWS Graviton3
    (0x41, 0xD41): "Cortex-A78",
    (0x41, 0xD49): "Neoverse-N2",
    (0x41, 0xD4F): "Neoverse-V2",  # NVIDIA Grace, AWS Graviton4
    (0x41, 0xD84): "Neoverse-V3",
    (0x41, 0xD8E): "Neoverse-N3",
    (0x4E, 0x004): "Carmel",  # NVIDIA Jetson AGX Xavier
    (0xC0, 0xAC3): "Ampere-1",
}


def _blocks(text: str) -> list[dict[str, str]]:
    blocks: list[dict[str, str]] = []
    cur: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            if not line.strip() and cur:
                blocks.append(cur)
                cur = {}
            continue
        k = key.strip()
        if k == "processor" and "processor" in cur:  # no blank line between blocks
            blocks.append(cur)
            cur = {}
        cur[k] = value.strip()
    if cur:
        blocks.append(cur)
    return [b for b in blocks if "processor" in b]


def parse_cpuinfo(text: str) -> CpuInfo | None:
    """``proc/cpuinfo`` of x86 or arm64; None when it lists no processor."""
    blocks = _blocks(text)
    if not blocks:
        return None
    first = blocks[0]
    implementer = parse_hex(first.get("CPU implementer"))
    part = parse_hex(first.get("CPU part"))
    vendor = first.get("vendor_id")
    model = first.get("model name")
    if implementer is not None:
        vendor = vendor or ARM_IMPLEMENTERS.get(implementer, f"0x{implementer:02x}")
        if model is None and part is not None:
            model = ARM_PARTS.get((implementer, part))
    sockets = cores = None
    if all("physical id" in b and "core id" in b for b in blocks):
        sockets = len({b["physical id"] for b in blocks})
        cores = len({(b["physical id"], b["core id"]) for b in blocks})
    flags = first.get("flags", first.get("Features", ""))
    x86_flags = first.get("flags")
    return CpuInfo(
        vendor=vendor or None,
        model_name=model or None,
        threads=len(blocks),
        sockets=sockets,
        cores=cores,
        flags=frozenset(flags.split()),
        hypervisor=None if x86_flags is None else "hypervisor" in x86_flags.split(),
        implementer=implementer,
        part=part,
    )


def parse_cpu_numbers(text: str | None) -> tuple[int, ...] | None:
    """cpufreq's ``affected_cpus``: CPU numbers separated by spaces (``0 1 2 3``).

    cpufreq prints this list one number at a time, unlike the ranges of a cpulist
    file; a recorded tree may hold either form, so both parse.
    """
    if text is None:
        return None
    words = text.split()
    if words and all(w.isdigit() for w in words):
        return tuple(sorted({int(w) for w in words}))
    return parse_cpulist(text)


def parse_topology(ids: Mapping[int, tuple[int | None, int | None]]) -> tuple[int, int] | None:
    """Sockets and cores from per-CPU (physical_package_id, core_id); None if any is missing."""
    pairs = list(ids.values())
    if not pairs or any(p is None or c is None for p, c in pairs):
        return None
    return len({p for p, _ in pairs}), len(set(pairs))
