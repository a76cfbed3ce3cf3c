"""The boot chain: UEFI Secure Boot and the TPM (advisory posture)."""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, unknown, warned
from dolmen.checks.security.posture import unread
from dolmen.checks.security.remedies import MOK_ENROL

SB_REMEDY = (
    "Enable Secure Boot in the firmware setup (mokutil --sb-state shows the state). Sign the "
    "out-of-tree modules first or they stop loading: " + MOK_ENROL
)


@check(
    "security.secure_boot",
    title="UEFI Secure Boot verifies the boot chain",
    level=Level.STANDARD,
    needs=("security",),
    remedy=SB_REMEDY,
    source="UEFI specification (SecureBoot and SetupMode variables); DGX OS enables it",
    gating=False,
)
def secure_boot(ctx: Context) -> list[Outcome]:
    """Reads sys/firmware/efi and the SecureBoot and SetupMode EFI variables."""
    sec = ctx.security
    if sec.secure_boot is None:
        why = sec.unread.get("secure_boot")
        if sec.efi is False:
            # Not "off": without UEFI firmware there is no Secure Boot state to read at all.
            return [
                unknown(
                    "host",
                    "not booted through EFI (legacy BIOS, or a VM without UEFI firmware): "
                    "no Secure Boot state to read",
                    reason=why,
                )
            ]
        return [unread("host", "the Secure Boot state", why)]
    if sec.setup_mode:
        return [
            warned(
                "host",
                "the firmware is in Setup Mode (no Platform Key enrolled): anyone with "
                "access can enroll keys and boot unsigned code",
                remedy="Enroll the platform keys (restore the factory keys in the firmware "
                "setup), then enable Secure Boot.",
                secure_boot=sec.secure_boot,
                setup_mode=True,
            )
        ]
    if sec.secure_boot:
        return [passed("host", "Secure Boot is enabled", secure_boot=True)]
    return [
        warned(
            "host",
            "Secure Boot is off: the bootloader, kernel and modules are not verified",
            secure_boot=False,
        )
    ]


@check(
    "security.tpm",
    title="A TPM 2.0 is present for measured boot, sealed keys and attestation",
    level=Level.STANDARD,
    needs=("security",),
    remedy="Enable the TPM in the firmware setup (firmware TPM: Intel PTT / AMD fTPM, or a "
    "discrete TPM 2.0); check with ls /sys/class/tpm and tpm2_getcap properties-fixed.",
    source="TCG PC Client profile; systemd-cryptenroll --tpm2-device and tpm2-tools need 2.0",
    gating=False,
)
def tpm(ctx: Context) -> list[Outcome]:
    """Reads sys/class/tpm and the tpm_version_major of the first TPM."""
    sec = ctx.security
    if sec.tpm_present is None:
        return [unread("host", "the TPM", sec.unread.get("tpm_present"))]
    if not sec.tpm_present:
        return [
            warned(
                "host",
                "no TPM: no measured boot, no disk keys sealed to the boot state, "
                "no remote attestation",
            )
        ]
    if sec.tpm_version == 1:
        return [
            warned(
                "host",
                "TPM 1.2: measured boot tooling (tpm2-tools, systemd-cryptenroll, Keylime) "
                "needs TPM 2.0",
                tpm_version=1,
            )
        ]
    if sec.tpm_version == 2:
        return [passed("host", "TPM 2.0 present", tpm_version=2)]
    why = sec.unread.get("tpm_version", "unread")
    return [passed("host", f"a TPM is present (its version: {why})", tpm_version=sec.tpm_version)]
