"""What the running kernel accepts: lockdown mode and module signature enforcement, with what
it means for the NVIDIA module (advisory posture)."""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, unknown, warned
from dolmen.checks.security.posture import unread
from dolmen.checks.security.remedies import LOCKDOWN_NVIDIA, MOK_ENROL

_LOCKED = ("integrity", "confidentiality")
SIGN_REMEDY = "Sign the NVIDIA module with an enrolled key. " + MOK_ENROL


@check(
    "security.lockdown",
    title="Kernel lockdown keeps root from modifying the running kernel",
    level=Level.STANDARD,
    needs=("security",),
    remedy="Boot with lockdown=integrity (add it to GRUB_CMDLINE_LINUX in /etc/default/grub, "
    "then sudo update-grub or sudo grub2-mkconfig -o /boot/grub2/grub.cfg); distributions "
    "turn it on with Secure Boot. " + LOCKDOWN_NVIDIA + MOK_ENROL,
    source="kernel_lockdown(7)",
    gating=False,
)
def lockdown(ctx: Context) -> list[Outcome]:
    """Reads sys/kernel/security/lockdown (securityfs must be mounted)."""
    sec = ctx.security
    if sec.lockdown is None:
        return [unread("host", "the lockdown mode", sec.unread.get("lockdown"))]
    if sec.lockdown == "none":
        return [
            warned(
                "host",
                "kernel lockdown is off: root can change the running kernel (/dev/mem, "
                "unsigned kexec, unsigned modules without sig_enforce)",
                mode="none",
            )
        ]
    note = (
        ": kernel memory reads are blocked too (some tracing and profiling tools fail)"
        if sec.lockdown == "confidentiality"
        else ""
    )
    return [passed("host", f"kernel lockdown is {sec.lockdown}{note}", mode=sec.lockdown)]


@check(
    "security.module_signing",
    title="The kernel loads only signed modules, and the NVIDIA module is signed",
    level=Level.STANDARD,
    needs=("security", "stack", "gpu"),
    remedy=SIGN_REMEDY,
    source="kernel module-signing.rst (sig_enforce, lockdown); NVIDIA driver installation "
    "guide (Secure Boot and module signing)",
    gating=False,
)
def module_signing(ctx: Context) -> list[Outcome]:
    """Reads sig_enforce (sys/module/module/parameters, module.sig_enforce= on the command
    line), lockdown, kernel.modules_disabled, Secure Boot, the nvidia module's taint
    (E: unsigned) and whether NVIDIA GPUs are present."""
    sec = ctx.security
    gpus = ctx.gpu.present
    nvidia = nvidia_loaded(ctx)
    ev: dict[str, Any] = {
        "sig_enforce": sec.module_sig_enforce,
        "lockdown": sec.lockdown,
        "secure_boot": sec.secure_boot,
        "nvidia_loaded": nvidia,
        "nvidia_signed": sec.nvidia_module_signed,
    }
    if sec.modules_disabled:
        return [passed("host", "module loading is disabled (kernel.modules_disabled=1)", **ev)]
    if sec.module_sig_enforce or sec.lockdown in _LOCKED:
        how = "sig_enforce" if sec.module_sig_enforce else f"lockdown={sec.lockdown}"
        # Under lockdown the refusal is the kernel's, not a setting one can flip back.
        remedy = SIGN_REMEDY if sec.module_sig_enforce else LOCKDOWN_NVIDIA + SIGN_REMEDY
        if gpus and nvidia is False:
            return [
                warned(
                    "host",
                    f"module signatures are enforced ({how}) and the nvidia module is not "
                    "loaded: an unsigned nvidia module is refused at load time "
                    "(Key was rejected by service)",
                    remedy=remedy,
                    **ev,
                )
            ]
        if nvidia and sec.nvidia_module_signed is False:
            return [
                warned(
                    "host",
                    f"module signatures are enforced ({how}) but the loaded nvidia module "
                    "carries taint E (unsigned): it was loaded before enforcement and will be "
                    "refused at the next load",
                    remedy=remedy,
                    **ev,
                )
            ]
        signed = ""
        if nvidia:
            signed = (
                " and the nvidia module is signed"
                if sec.nvidia_module_signed
                else " and the nvidia module loaded under them"
            )
        return [passed("host", f"module signatures are enforced ({how}){signed}", **ev)]
    if sec.module_sig_enforce is None:
        why = sec.unread.get("module_sig_enforce", "missing")
        return [unknown("host", f"whether module signatures are enforced is unknown: {why}", **ev)]
    if nvidia and sec.nvidia_module_signed is False:
        sb = (
            "Secure Boot is on yet nothing enforces signatures"
            if sec.secure_boot
            else "on a Secure Boot host it will not load"
        )
        return [
            warned(
                "host",
                f"the nvidia module is unsigned (taint E) and signatures are not enforced: {sb}",
                **ev,
            )
        ]
    return [
        warned(
            "host",
            "module signatures are not enforced (sig_enforce=N, no lockdown): the kernel "
            "runs any module root loads",
            remedy="Turn on Secure Boot (which enables lockdown and signature checks) or boot "
            "with module.sig_enforce=1, after signing out-of-tree modules (NVIDIA, MOFED) "
            "with an enrolled key. " + SIGN_REMEDY,
            **ev,
        )
    ]


def nvidia_loaded(ctx: Context) -> bool | None:
    """Whether nvidia.ko is loaded: proc/modules lists it, its proc file is there, or the
    driver answered for GPUs (loaded by definition); False only where proc/modules was read
    without it; None when the bundle shows neither."""
    s, g = ctx.stack, ctx.gpu
    if (s.modules and s.modules.get("nvidia")) or s.driver_version is not None or bool(g.gpus):
        return True
    return False if s.modules is not None else None
