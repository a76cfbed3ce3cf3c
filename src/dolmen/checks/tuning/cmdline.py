"""``tuning.cmdline.pending``: kernel parameters staged in the boot loader are in effect.

Parameters staged in GRUB (``/etc/default/grub`` and its drop-ins) or in the BLS
entry of the running kernel but absent from ``/proc/cmdline`` wait for a reboot:
until then the host does not have them (``iommu=pt`` staged is not ``iommu=pt``).
"""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, skipped, unknown, warned
from dolmen.tune.settings.cmdline import staged_args


@check(
    "tuning.cmdline.pending",
    title="Kernel parameters staged for boot are in effect (no reboot pending)",
    level=Level.STANDARD,
    remedy="Reboot the host (drain it first) so the staged kernel parameters take effect.",
    gating=False,
)
def pending(ctx: Context) -> list[Outcome]:
    """Reads ``proc/cmdline`` and the boot loader's staged parameters (GRUB, BLS)."""
    cmdline = ctx.host.read_opt("proc/cmdline")
    if cmdline is None:
        return [unknown("host", "the running kernel's command line is unreadable")]
    staged = staged_args(ctx.host)
    if staged is None:
        return [skipped("host", "no GRUB configuration or BLS entries to compare with")]
    args, where = staged
    booted = set(cmdline.split())
    waiting = sorted(a for a in args if a not in booted)
    if not waiting:
        return [passed("host", f"every parameter staged in {where} is in effect")]
    return [
        warned(
            "host",
            f"{len(waiting)} kernel parameter(s) staged in {where} wait for a reboot: "
            + " ".join(waiting),
            pending=waiting,
        )
    ]
