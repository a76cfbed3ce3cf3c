"""``[sysctl]``: kernel parameters under /proc/sys, e.g. ``"vm.swappiness" = 10``.

Values are written as the kernel prints them (multi-value sysctls such as
``net.ipv4.tcp_rmem`` take whitespace-separated numbers) and compared
whitespace-insensitively, since the kernel prints tabs where a profile has
spaces. A sysctl the kernel does not have is skipped; one it refuses to let
this process write (``net.core.rmem_max`` outside the initial network
namespace) is skipped with that reason. ``boot_line`` persists the value
through sysctl.d (see ``boot.py``, which also finds files that override it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dolmen.host import Host
from dolmen.tune.model import Action, Change, Reading, Target
from dolmen.tune.settings.base import Entry
from dolmen.tune.settings.kernel_file import KernelFileSetting

_NAME = re.compile(r"^[a-z0-9_][a-z0-9_.\-/:]*[a-z0-9_]$", re.I)
_TOKEN = re.compile(r"^[A-Za-z0-9_.:+\-]+$")

# Known ranges, checked at load so a typo is refused before anything is written.
# Sources: Linux Documentation/admin-guide/sysctl/{vm,kernel}.rst and
# Documentation/networking/ip-sysctl.rst [R].
RANGES: Mapping[str, tuple[int, int]] = {
    "vm.swappiness": (0, 200),  # 0-100 before 5.8, 0-200 since
    "vm.dirty_ratio": (0, 100),
    "vm.dirty_background_ratio": (0, 100),
    "vm.overcommit_memory": (0, 2),
    "vm.zone_reclaim_mode": (0, 7),
    "kernel.numa_balancing": (0, 3),  # 2 and 3: memory tiering modes (5.18+)
    "net.ipv4.conf.all.arp_announce": (0, 2),
    "net.ipv4.conf.default.arp_announce": (0, 2),
    "net.ipv4.conf.all.arp_ignore": (0, 8),
    "net.ipv4.conf.default.arp_ignore": (0, 8),
    "net.ipv4.tcp_slow_start_after_idle": (0, 1),
    "net.ipv4.tcp_mtu_probing": (0, 2),
}
# sysctls whose value must be one the kernel lists in a sibling file.
CHOICES_FROM: Mapping[str, str] = {
    "net.ipv4.tcp_congestion_control": "net.ipv4.tcp_available_congestion_control",
}


def sysctl_path(name: str) -> str:
    """``vm.swappiness`` -> ``proc/sys/vm/swappiness`` (names with '/' are taken as paths,
    as ``sysctl`` does, so interface names with dots can be written ``net/ipv4/conf/eth0.1/x``)."""
    rel = name if "/" in name else name.replace(".", "/")
    return "proc/sys/" + rel


class Sysctl(KernelFileSetting):
    """Kernel parameters (``sysctl -w``)."""

    section = "sysctl"
    persists = False  # a kernel value; sysctl.d brings it back when the profile persists
    title = "kernel parameters (/proc/sys)"

    def key(self, raw: str) -> str:
        if not _NAME.match(raw) or ".." in raw or "//" in raw:
            raise ValueError(f"{raw!r} is not a sysctl name (like vm.swappiness)")
        # One spelling per sysctl, so "vm/swappiness" and "vm.swappiness" collide at load.
        if "/" in raw and "." not in raw:
            return raw.replace("/", ".")
        return raw

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        if isinstance(value, bool):
            raise ValueError("a sysctl takes a number or a string, not true/false (use 1/0)")
        if isinstance(value, list):
            if not value or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                raise ValueError("a list value must be a non-empty list of integers")
            return " ".join(str(v) for v in value)
        if isinstance(value, int):
            lo, hi = RANGES.get(key, (-(2**63), 2**64 - 1))
            if not lo <= value <= hi:
                raise ValueError(f"{value} is out of range for {key}: valid range {lo}..{hi}")
            return str(value)
        if isinstance(value, str):
            tokens = value.split()
            if not tokens or not all(_TOKEN.match(t) for t in tokens):
                raise ValueError(f"{value!r} is not a sysctl value (numbers or words)")
            if key in RANGES and len(tokens) == 1 and tokens[0].lstrip("-").isdigit():
                return self.validate(key, int(tokens[0]), fields)
            return " ".join(tokens)
        raise ValueError(f"a sysctl takes a number or a string, not {type(value).__name__}")

    def needs_why(self, key: str, value: str) -> str | None:
        if key == "kernel.numa_balancing" and value == "0":
            return (
                "disabling automatic NUMA balancing cost up to 20% on some CPU-bound AMD "
                "workloads (redhat-performance/tuned PR #283); say why this profile wants it"
            )
        return None

    def targets(self, host: Host, entry: Entry) -> list[Target]:
        t = Target(
            self.section,
            entry.key,
            entry.key,
            entry.value,
            sysctl_path(entry.key),
            entry.origin,
            entry.source,
        )
        return [t]

    def refusal(self, host: Host, target: Target, text: str) -> str | None:
        choices_of = CHOICES_FROM.get(target.key)
        if choices_of is None:
            return None
        avail = host.read_value(sysctl_path(choices_of))
        if avail is not None and target.desired not in avail.split():
            return (
                f"{target.desired} is not available here ({choices_of} = {avail}); "
                "load its kernel module first"
            )
        return None

    def unwritable(self, target: Target) -> str:
        return _read_only_reason(target.key)

    def plan(self, target: Target, reading: Reading) -> Change:
        change = super().plan(target, reading)
        held = reading.value is not None and self.same(reading.value, target.desired)
        if change.action is Action.SKIP and held:
            # Read-only here but already as wanted (a per-namespace sysctl): nothing to do.
            return Change(target, reading.value, Action.OK, notes=(reading.skip,))
        return change

    def boot_line(self, target: Target) -> tuple[str, str] | None:
        return ("sysctl", f"{target.key} = {target.desired}")


def _read_only_reason(key: str) -> str:
    if key.startswith("net."):
        return "read-only here: this sysctl can be set only from the initial network namespace"
    return "read-only here (the kernel refuses writes to it)"
