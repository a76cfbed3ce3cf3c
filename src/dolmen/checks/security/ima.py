"""Runtime file integrity: IMA and EVM (advisory posture)."""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, warned
from dolmen.checks.security.posture import unread
from dolmen.checks.security.remedies import IMA_NVIDIA


@check(
    "security.ima",
    title="The kernel's Integrity Measurement Architecture is available",
    level=Level.STANDARD,
    needs=("security",),
    remedy="Run a kernel built with CONFIG_IMA (distribution kernels are) and boot with "
    "ima_policy=tcb, or load a policy (echo /etc/ima/ima-policy > "
    "/sys/kernel/security/ima/policy); appraisal needs files signed with evmctl. " + IMA_NVIDIA,
    source="Linux IMA/EVM (Documentation/security/IMA-templates.rst, ima_policy ABI)",
    gating=False,
)
def ima(ctx: Context) -> list[Outcome]:
    """Reads sys/kernel/security/ima (or integrity/ima) and the evm mode file."""
    sec = ctx.security
    if sec.ima is None:
        return [unread("host", "IMA", sec.unread.get("ima"))]
    if not sec.ima:
        return [
            warned(
                "host",
                "the kernel has no IMA: files are neither measured nor appraised",
                evm=sec.evm,
            )
        ]
    evm = "EVM initialised" if sec.evm else "EVM not initialised"
    return [passed("host", f"IMA is available ({evm})", evm=sec.evm)]
