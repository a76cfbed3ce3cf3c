"""``[hugepages]``: persistent huge pages per NUMA node, e.g. ``"2048kB" = { per_node = 512 }``.

``per_node`` reserves that many pages on every node; ``total`` spreads a
count evenly over the nodes (the lower nodes take the remainder), which is
what ``hugepages=N`` on the kernel command line does. Hosts without per-node
folders use the global ``/sys/kernel/mm/hugepages`` count. A reservation of
more than half a node's memory is skipped: it would starve the node (the
NVIDIA inference profile reserves 16 GiB, which a small host cannot give).
The kernel may allocate fewer pages than asked when memory is fragmented;
apply reports the count it got and verify reports the shortfall.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dolmen.host import Host
from dolmen.tune.model import Target
from dolmen.tune.settings.base import Entry
from dolmen.tune.settings.kernel_file import KernelFileSetting

NODE = "sys/devices/system/node"
GLOBAL = "sys/kernel/mm/hugepages"
MAX_SHARE = 0.5  # of a node's memory; see module docstring
_SIZE = re.compile(r"^(\d+)\s*(kB|KB|K|MB|M|GB|G)$", re.I)
_MEMTOTAL = re.compile(r"MemTotal:\s+(\d+)\s*kB")


def size_kb(raw: str) -> int:
    """``2M``/``2MB``/``2048kB`` -> 2048; ValueError otherwise."""
    m = _SIZE.match(raw.strip())
    if m is None:
        raise ValueError(f"{raw!r} is not a huge page size; valid forms: 2048kB, 2M, 1G")
    n, unit = int(m.group(1)), m.group(2).upper()
    return n * {"KB": 1, "K": 1, "MB": 1024, "M": 1024, "GB": 1024**2, "G": 1024**2}[unit]


def spread(total: int, nodes: int) -> list[int]:
    """``total`` pages over ``nodes`` nodes, evenly, remainder to the lower nodes."""
    base, extra = divmod(total, nodes)
    return [base + (1 if i < extra else 0) for i in range(nodes)]


class HugePages(KernelFileSetting):
    """Persistent huge page counts, per NUMA node."""

    section = "hugepages"
    persists = False
    title = "persistent huge pages per NUMA node"
    extra_fields = frozenset({"per_node", "total"})

    def key(self, raw: str) -> str:
        return f"{size_kb(raw)}kB"

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        given = [k for k in ("per_node", "total") if k in fields]
        if value is not None or len(given) != 1:
            raise ValueError("give exactly one of per_node = N or total = N (not value)")
        count = fields[given[0]]
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= 10**8:
            raise ValueError(f"{given[0]} must be a whole number 0..100000000, not {count!r}")
        return f"{given[0]}={count}"

    def targets(self, host: Host, entry: Entry) -> list[Target] | str:
        mode, _, count_s = entry.value.partition("=")
        count = int(count_s)
        per_node = host.glob(f"{NODE}/node*/hugepages/hugepages-{entry.key}/nr_hugepages")
        if per_node:
            counts = [count] * len(per_node) if mode == "per_node" else spread(count, len(per_node))
            paths = per_node
        else:
            glob_path = f"{GLOBAL}/hugepages-{entry.key}/nr_hugepages"
            if not host.exists(glob_path):
                return f"no {entry.key} huge pages on this host (the CPU or kernel lacks them)"
            paths, counts = [glob_path], [count]
        out = []
        for path, n in zip(paths, counts, strict=True):
            node = path.split("/")[4] if path.startswith(NODE) else "host"
            out.append(
                Target(
                    self.section,
                    entry.key,
                    f"{node} {entry.key} pages",
                    str(n),
                    path,
                    entry.origin,
                    entry.source,
                    {"meminfo": f"{NODE}/{node}/meminfo" if node != "host" else "proc/meminfo"},
                )
            )
        return out

    def refusal(self, host: Host, target: Target, text: str) -> str | None:
        meminfo = host.read_opt(target.extra.get("meminfo", ""))
        m = _MEMTOTAL.search(meminfo or "")
        want_kb = int(target.desired) * int(target.key.removesuffix("kB"))
        if m is not None and want_kb > MAX_SHARE * int(m.group(1)):
            return (
                f"would reserve {want_kb // 1024} MiB of {int(m.group(1)) // 1024} MiB "
                f"on {target.name.split()[0]} (more than {MAX_SHARE:.0%})"
            )
        return None
