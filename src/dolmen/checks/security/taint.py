"""The kernel taint mask, decoded: the NVIDIA driver's expected taints apart from real trouble
(advisory posture)."""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, warned
from dolmen.checks.security.posture import unread

# Taints that say where a module came from, not that anything went wrong: P (proprietary
# licence: the NVIDIA proprietary flavour), O (out-of-tree: NVIDIA open and proprietary,
# MLNX_OFED), E (unsigned: DKMS builds); K (live patching) and T (a build option of the
# kernel) are deliberate. Every other bit records an event (oops, MCE, soft lockup, warning).
EXPECTED = frozenset("POEKT")


@check(
    "security.kernel_taint",
    title="The kernel is not tainted by errors (driver-origin taints expected)",
    level=Level.STANDARD,
    needs=("security", "stack"),
    remedy="Find the event that tainted the kernel (dmesg | grep -iE 'taint|BUG|WARNING|Oops|"
    "mce|soft lockup'); for M check the BMC's event log (ipmitool sel list) and rasdaemon "
    "(ras-mc-ctl --errors). The mask clears only at reboot.",
    source="kernel Documentation/admin-guide/tainted-kernels.rst",
    gating=False,
)
def kernel_taint(ctx: Context) -> list[Outcome]:
    """Reads proc/sys/kernel/tainted (decoded) and the taint letters of the loaded NVIDIA
    modules in proc/modules."""
    sec, s = ctx.security, ctx.stack
    if sec.taint is None:
        return [unread("host", "the kernel taint mask", sec.unread.get("taint"))]
    flags = {f.letter: f.meaning for f in sec.taint_flags}
    ev: dict[str, Any] = {
        "taint": sec.taint,
        "flags": flags,
        "nvidia_modules": dict(s.module_taints),
    }
    if not flags:
        return [passed("host", "the kernel is not tainted", **ev)]
    other = {k: v for k, v in flags.items() if k not in EXPECTED}
    if other:
        words = ", ".join(f"{k} ({v})" for k, v in other.items())
        return [warned("host", f"the kernel is tainted: {words}", **ev)]
    nv = "".join(sorted(set("".join(s.module_taints.values()))))
    by = (
        f", as the NVIDIA modules' own taints ({nv}) explain"
        if nv and set(flags) <= set(nv) | set("KT")
        else " (third-party or unsigned modules)"
    )
    words = ", ".join(f"{k} ({v})" for k, v in flags.items())
    return [passed("host", f"tainted only by module origin: {words}{by}", **ev)]
