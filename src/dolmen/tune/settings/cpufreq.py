"""``[cpu]``: CPU frequency governor and energy-performance preference (cpufreq sysfs).

One target per cpufreq policy (``cpufreq/policy<N>``; kernels or recordings
without policy folders use ``cpu<N>/cpufreq``). A host without cpufreq (most
VMs, some arm64 servers) skips the entry with that reason. The value must be
one the driver lists (``scaling_available_governors``,
``energy_performance_available_preferences``), else the target is skipped
with the list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dolmen.host import Host
from dolmen.tune.model import Target
from dolmen.tune.settings.base import Entry, choice_error
from dolmen.tune.settings.kernel_file import KernelFileSetting

CPU = "sys/devices/system/cpu"

# profile key -> (file in the policy folder, file listing the valid values, known values)
# Known values: Documentation/admin-guide/pm/cpufreq.rst and intel_pstate.rst [R].
FILES: Mapping[str, tuple[str, str, tuple[str, ...]]] = {
    "governor": (
        "scaling_governor",
        "scaling_available_governors",
        ("performance", "powersave", "schedutil", "ondemand", "conservative", "userspace"),
    ),
    "energy_performance_preference": (
        "energy_performance_preference",
        "energy_performance_available_preferences",
        ("default", "performance", "balance_performance", "balance_power", "power"),
    ),
}


def policy_dirs(host: Host) -> list[str]:
    """cpufreq policy folders: ``cpufreq/policy*``, else ``cpu*/cpufreq`` (older layouts)."""
    found = host.glob(f"{CPU}/cpufreq/policy*")
    if found:
        return found
    return [p for p in host.glob(f"{CPU}/cpu*/cpufreq") if p.split("/")[-2][3:].isdigit()]


class CpuFreq(KernelFileSetting):
    """CPU governor and EPP, per cpufreq policy."""

    section = "cpu"
    keys = FILES
    persists = False
    title = "CPU frequency governor and energy-performance preference"
    key_order = ("governor", "energy_performance_preference")  # intel_pstate: EPP follows

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        known = FILES[key][2]
        if not isinstance(value, str) or value not in known:
            raise choice_error(key, value, known)
        return value

    def targets(self, host: Host, entry: Entry) -> list[Target] | str:
        dirs = policy_dirs(host)
        if not dirs:
            return "no cpufreq on this host (a VM, or no cpufreq driver loaded)"
        name, _, _ = FILES[entry.key]
        out = []
        for d in dirs:
            if not host.exists(f"{d}/{name}"):
                continue
            label = d.rsplit("/", 1)[-1] if "policy" in d else d.split("/")[-2]
            out.append(
                Target(
                    self.section,
                    entry.key,
                    f"{label} {entry.key}",
                    entry.value,
                    f"{d}/{name}",
                    entry.origin,
                    entry.source,
                    {"available": f"{d}/{FILES[entry.key][1]}"},
                )
            )
        return out or f"the cpufreq driver here has no {name}"

    def refusal(self, host: Host, target: Target, text: str) -> str | None:
        avail = host.read_value(target.extra.get("available", ""))
        if avail is not None and target.desired not in avail.split():
            return f"not offered by this driver; valid: {avail}"
        return None
