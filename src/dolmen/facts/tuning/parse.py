"""Pure parsers of the tuning sources: a selected-value file (``[none] mq-deadline``),
limits.conf, ``proc/<pid>/limits`` and the tuning tokens of the kernel command line."""

from __future__ import annotations

import re

from dolmen.facts.tuning.model import LimitEntry

# Kernel command-line parameters that tuning profiles set (NVIDIA tuned, DGX OS packages).
CMDLINE_KEYS = frozenset(
    {
        "iommu",
        "intel_iommu",
        "amd_iommu",
        "iommu.passthrough",
        "init_on_alloc",
        "numa_balancing",
        "transparent_hugepage",
        "hugepages",
        "hugepagesz",
        "default_hugepagesz",
        "isolcpus",
        "nohz_full",
        "rcu_nocbs",
        "mitigations",
        "pci",
        "processor.max_cstate",
        "intel_idle.max_cstate",
        "idle",
        "nosmt",
    }
)

LIMIT_ITEMS = ("memlock", "stack", "nofile")

_PROC_LIMITS = {
    "Max locked memory": "memlock",
    "Max stack size": "stack",
    "Max open files": "nofile",
}


def parse_selected(text: str) -> str | None:
    """The bracketed choice of a sysfs selector: ``always [madvise] never`` -> "madvise"."""
    words = text.split()
    chosen = [w[1:-1] for w in words if len(w) > 2 and w[0] == "[" and w[-1] == "]"]
    if len(chosen) != 1 or not re.fullmatch(r"[\w+-]+", chosen[0]):
        return None
    return chosen[0]


def parse_limits_conf(path: str, text: str) -> list[LimitEntry]:
    """memlock/stack/nofile entries of a pam_limits file (comments and other items skipped)."""
    out: list[LimitEntry] = []
    for line in text.splitlines():
        parts = line.split("#", 1)[0].split()
        if len(parts) == 4 and parts[1] in ("soft", "hard", "-") and parts[2] in LIMIT_ITEMS:
            out.append(LimitEntry(path, *parts))
    return out


def parse_proc_limits(text: str) -> dict[str, tuple[str, str]]:
    """memlock/stack/nofile (soft, hard) of a ``/proc/<pid>/limits`` table."""
    out: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        m = re.match(r"^(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)", line)
        if m is not None and m[1] in _PROC_LIMITS:
            out[_PROC_LIMITS[m[1]]] = (m[2], m[3])
    return out


def parse_cmdline_tuning(cmdline: str) -> dict[str, tuple[str, ...]]:
    """The CMDLINE_KEYS on a kernel command line, each with its values in order."""
    found: dict[str, list[str]] = {}
    for token in cmdline.split():
        if token == "--":  # what follows goes to init, not the kernel
            break
        key, _, value = token.partition("=")
        if key in CMDLINE_KEYS:
            found.setdefault(key, []).append(value)
    return {k: tuple(v) for k, v in found.items()}
