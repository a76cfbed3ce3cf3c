"""Memory facts: ``proc/meminfo``, huge page pools, transparent huge pages, swap.

Sources: ``proc/meminfo``; ``sys/kernel/mm/hugepages/hugepages-<size>kB/`` (one
pool per page size: ``nr_hugepages``, ``free_hugepages``, ``resv_hugepages``,
``surplus_hugepages``); ``sys/kernel/mm/transparent_hugepage/{enabled,defrag}``
(the bracketed word is the one in force: ``always [madvise] never``);
``proc/swaps``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from dolmen.facts.reading import malformed, parse_int, parsed, read_text, read_value
from dolmen.frozen import frozen
from dolmen.frozen.regex import pattern
from dolmen.host import NOT_IN_BUNDLE, Host

_BRACKETED = pattern(r"\[([^\]\s]+)\]")
_POOL = pattern(r"hugepages-(\d+)kB")

HUGEPAGES = "sys/kernel/mm/hugepages"
THP = "sys/kernel/mm/transparent_hugepage"

_MEMINFO_LINE = pattern(r"([^:\s][^:]*):\s*(\d+)(?:\s+(kB))?\s*")
_NODE_PREFIX = pattern(r"^Node \d+\s+")  # sys/devices/system/node/nodeN/meminfo


@frozen
class HugePagePool:
    """One huge page size's pool (system-wide or on one NUMA node)."""

    size_kb: int
    total: int | None
    free: int | None
    reserved: int | None = None  # system-wide pools only
    surplus: int | None = None


@frozen
class SwapArea:
    """One line of ``proc/swaps``; sizes in bytes."""

    filename: str
    type: str  # partition, file
    size_bytes: int
    used_bytes: int
    priority: int


@frozen
class MemoryFacts:
    """The host's memory. None fields are explained in ``unread``; sizes are bytes."""

    total_bytes: int | None
    available_bytes: int | None
    free_bytes: int | None
    swap_total_bytes: int | None
    swap_free_bytes: int | None
    hugepages_total: int | None  # default-size pool, from meminfo
    hugepages_free: int | None
    hugepage_size_bytes: int | None  # the default huge page size
    hugetlb_bytes: int | None  # all pools together (meminfo Hugetlb, Linux 4.16+)
    hugepage_pools: tuple[HugePagePool, ...] = ()
    thp_enabled: str | None = None  # always, madvise, never
    thp_defrag: str | None = None  # always, defer, defer+madvise, madvise, never
    swaps: tuple[SwapArea, ...] | None = None
    meminfo: Mapping[str, int] = field(default_factory=dict)  # kB lines in bytes, counts as is
    unread: Mapping[str, str] = field(default_factory=dict)


def parse_meminfo(text: str) -> dict[str, int]:
    """``proc/meminfo`` (or a node's meminfo without its ``Node N`` prefix) as a dict.

    Values with a ``kB`` unit become bytes (the kernel's kB is KiB); counts such as
    ``HugePages_Total`` stay counts. Lines that do not parse are skipped.
    """
    out: dict[str, int] = {}
    for line in text.splitlines():
        m = _MEMINFO_LINE.fullmatch(line)
        if m:
            key, value, unit = m.groups()
            key = _NODE_PREFIX.sub("", key.strip())
            out[key] = int(value) * (1024 if unit else 1)
    return out


def parse_bracketed(text: str) -> str | None:
    """The selected word of a sysfs choice file: ``always [madvise] never`` -> ``madvise``."""
    m = _BRACKETED.search(text)
    return m.group(1) if m else None


def parse_swaps(text: str) -> tuple[SwapArea, ...] | None:
    """``proc/swaps`` (sizes in KiB) as swap areas; None when the header is missing."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("Filename"):
        return None
    areas: list[SwapArea] = []
    for line in lines[1:]:
        parts = line.split()
        if len(parts) != 5:
            continue
        try:
            size, used, prio = int(parts[2]), int(parts[3]), int(parts[4])
        except ValueError:
            continue
        # The kernel escapes spaces in the path as \040 (seq_file mangling).
        name = parts[0].replace("\\040", " ")
        areas.append(SwapArea(name, parts[1], size * 1024, used * 1024, prio))
    return tuple(areas)


def read_pools(host: Host, folder: str, unread: dict[str, str], prefix: str) -> list[HugePagePool]:
    """The huge page pools under ``folder`` (``.../hugepages``), one per page size."""
    pools: list[HugePagePool] = []
    for name in host.listdir(folder):
        m = _POOL.fullmatch(name)
        if not m:
            continue
        size = int(m.group(1))
        values: dict[str, int | None] = {}
        for attr, fname in (
            ("total", "nr_hugepages"),
            ("free", "free_hugepages"),
            ("reserved", "resv_hugepages"),
            ("surplus", "surplus_hugepages"),
        ):
            r = read_value(host, f"{folder}/{name}/{fname}")
            values[attr] = parse_int(r.text)
            if values[attr] is None and r.reason != "missing":  # node pools have no resv
                unread[f"{prefix}{size}kB.{attr}"] = r.reason or malformed(r.text or "")
        pools.append(
            HugePagePool(
                size, values["total"], values["free"], values["reserved"], values["surplus"]
            )
        )
    return sorted(pools, key=lambda p: p.size_kb)


def collect(host: Host) -> MemoryFacts:
    """Read and parse the memory facts of ``host``."""
    unread: dict[str, str] = {}
    # an empty table is malformed: meminfo always has MemTotal
    r = read_text(host, "proc/meminfo")
    info = parsed(r, lambda text: parse_meminfo(text) or None, unread, "meminfo") or {}

    def get(key: str, name: str) -> int | None:
        if key in info:
            return info[key]
        lacks = f"missing ({key} not in proc/meminfo)"
        if host.absent("proc/meminfo") == NOT_IN_BUNDLE:  # an excerpt, not the whole file
            lacks = f"{NOT_IN_BUNDLE}: {key} (the proc/meminfo it holds lacks it)"
        why = unread.get("meminfo", lacks)
        unread[name] = f"{why}: proc/meminfo" if why == NOT_IN_BUNDLE else why  # name it
        return None

    thp: dict[str, str | None] = {}
    for name in ("enabled", "defrag"):
        t = read_value(host, f"{THP}/{name}")
        thp[name] = parse_bracketed(t.text or "")
        if thp[name] is None:
            why = t.reason or malformed(t.text or "")
            if t.reason == "missing" and host.is_dir("sys/kernel/mm"):
                why = "not supported (kernel built without transparent huge pages)"
            unread[f"thp_{name}"] = why

    swaps = parsed(read_text(host, "proc/swaps"), parse_swaps, unread, "swaps")

    return MemoryFacts(
        total_bytes=get("MemTotal", "total_bytes"),
        available_bytes=get("MemAvailable", "available_bytes"),
        free_bytes=get("MemFree", "free_bytes"),
        swap_total_bytes=get("SwapTotal", "swap_total_bytes"),
        swap_free_bytes=get("SwapFree", "swap_free_bytes"),
        hugepages_total=get("HugePages_Total", "hugepages_total"),
        hugepages_free=get("HugePages_Free", "hugepages_free"),
        hugepage_size_bytes=get("Hugepagesize", "hugepage_size_bytes"),
        hugetlb_bytes=get("Hugetlb", "hugetlb_bytes"),
        hugepage_pools=tuple(read_pools(host, HUGEPAGES, unread, "hugepage_pools.")),
        thp_enabled=thp["enabled"],
        thp_defrag=thp["defrag"],
        swaps=swaps,
        meminfo=info,
        unread=unread,
    )
