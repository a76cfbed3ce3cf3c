"""Security posture facts: EFI and Secure Boot, kernel lockdown, module signature
enforcement, TPM, IMA/EVM, active LSMs, kernel taint, and whether the nvidia module is signed.

Sources: ``sys/firmware/efi`` and the ``SecureBoot``/``SetupMode`` EFI variables
(efivarfs: 4 attribute bytes, then the value byte), ``sys/kernel/security/``
(``lockdown``, ``lsm``, ``ima``, ``evm``: securityfs, which must be mounted),
``sys/module/module/parameters/sig_enforce`` and ``module.sig_enforce=`` on
``proc/cmdline``, ``proc/sys/kernel/modules_disabled``, ``sys/class/tpm``,
``proc/sys/kernel/tainted`` (bits as in the kernel's tainted-kernels.rst) and
``sys/module/nvidia/taint``.

A file that is absent means "unknown" with its reason, never "off": a VM without
securityfs mounted has lockdown and LSMs, dolmen just cannot see them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import field

from dolmen.facts.reading import absent, malformed, parse_int, read_value, reason_for
from dolmen.frozen import frozen
from dolmen.host import Host

EFI_GLOBAL = "8be4df61-93ca-11d2-aa0d-e0f75e0f5a6b"  # EFI_GLOBAL_VARIABLE GUID (UEFI spec)
SECURE_BOOT_VAR = f"sys/firmware/efi/efivars/SecureBoot-{EFI_GLOBAL}"
SETUP_MODE_VAR = f"sys/firmware/efi/efivars/SetupMode-{EFI_GLOBAL}"
SECURITYFS = "sys/kernel/security"

# Documentation/admin-guide/tainted-kernels.rst: bit -> (letter when set, meaning).
TAINT_BITS: Mapping[int, tuple[str, str]] = {
    0: ("P", "proprietary module loaded"),
    1: ("F", "module force-loaded"),
    2: ("S", "kernel running on an out-of-specification system"),
    3: ("R", "module force-unloaded"),
    4: ("M", "machine check exception occurred"),
    5: ("B", "bad page referenced or unexpected page flags"),
    6: ("U", "taint requested by userspace"),
    7: ("D", "kernel died recently (OOPS or BUG)"),
    8: ("A", "ACPI table overridden"),
    9: ("W", "kernel issued a warning"),
    10: ("C", "staging driver loaded"),
    11: ("I", "workaround for a platform firmware bug applied"),
    12: ("O", "externally-built (out-of-tree) module loaded"),
    13: ("E", "unsigned module loaded"),
    14: ("L", "soft lockup occurred"),
    15: ("K", "kernel live-patched"),
    16: ("X", "auxiliary taint (distribution-defined)"),
    17: ("T", "kernel built with the struct randomization plugin"),
    18: ("N", "in-kernel test loaded"),
    19: ("J", "userspace used a mutating debug operation in fwctl"),
}


@frozen
class TaintFlag:
    """One set bit of the kernel taint mask."""

    bit: int
    letter: str
    meaning: str


@frozen
class SecurityFacts:
    """Boot-chain and kernel integrity posture; None fields have reasons in ``unread``."""

    efi: bool | None
    secure_boot: bool | None
    setup_mode: bool | None
    lockdown: str | None  # none | integrity | confidentiality
    lsms: tuple[str, ...] | None
    module_sig_enforce: bool | None
    modules_disabled: bool | None
    tpm_present: bool | None
    tpm_version: int | None
    ima: bool | None
    evm: int | None  # the evm file's value: 0 = not initialised, bits set = enabled modes
    taint: int | None
    taint_flags: tuple[TaintFlag, ...]
    nvidia_module_taint: str | None
    nvidia_module_signed: bool | None
    unread: Mapping[str, str] = field(default_factory=dict)


def parse_efivar_bool(data: bytes) -> bool | None:
    """An EFI boolean variable from efivarfs: 4 attribute bytes, then one value byte."""
    if len(data) < 5 or data[4] not in (0, 1):
        return None
    return data[4] == 1


def parse_lockdown(text: str) -> str | None:
    """The selected mode of ``none [integrity] confidentiality``, or None."""
    m = re.fullmatch(r"(?:\s*\w+\s*)*?\[(\w+)\](?:\s*\w+\s*)*", text.strip())
    return None if m is None else m[1]


def parse_lsm(text: str) -> tuple[str, ...] | None:
    """The comma-separated active LSMs (``lockdown,capability,yama,apparmor``)."""
    names = tuple(n for n in text.strip().split(",") if n)
    if not names or not all(re.fullmatch(r"[a-z][a-z0-9_]*", n) for n in names):
        return None
    return names


def decode_taint(mask: int) -> tuple[TaintFlag, ...]:
    """The set bits of a taint mask, with the kernel's letter and meaning."""
    return tuple(
        TaintFlag(bit, *TAINT_BITS.get(bit, ("?", "unknown taint bit")))
        for bit in range(mask.bit_length())
        if mask >> bit & 1
    )


def cmdline_sig_enforce(cmdline: str) -> bool | None:
    """``module.sig_enforce=1`` (or bare) on the kernel command line; None when absent."""
    found: bool | None = None
    for token in cmdline.split():
        key, eq, value = token.partition("=")
        if key == "module.sig_enforce":
            found = not eq or value.strip().lower() in ("1", "y", "yes", "on", "true")
    return found


def collect(host: Host) -> SecurityFacts:
    """Read and parse the security posture of ``host``."""
    unread: dict[str, str] = {}
    efi, secure_boot, setup_mode = _efi(host, unread)
    securityfs = _securityfs(host)
    lockdown = lsms = ima = evm = None
    if securityfs is not None:
        for key in ("lockdown", "lsms", "ima", "evm"):
            unread[key] = securityfs
    else:
        r = read_value(host, f"{SECURITYFS}/lockdown")
        if r.text is None:
            unread["lockdown"] = f"not supported: kernel without the lockdown LSM ({r.reason})"
        elif (lockdown := parse_lockdown(r.text)) is None:
            unread["lockdown"] = malformed(r.text)
        r = read_value(host, f"{SECURITYFS}/lsm")
        if r.text is None:
            unread["lsms"] = f"{r.reason}: {SECURITYFS}/lsm"
        elif (lsms := parse_lsm(r.text)) is None:
            unread["lsms"] = malformed(r.text)
        # IMA moved under integrity/ (kernel 6.x keeps a compatibility link at ima/).
        ima = host.is_dir(f"{SECURITYFS}/ima") or host.is_dir(f"{SECURITYFS}/integrity/ima")
        for rel in (f"{SECURITYFS}/evm", f"{SECURITYFS}/integrity/evm/evm"):
            if (evm := parse_int(host.read_value(rel))) is not None:
                break
        if evm is None:
            unread["evm"] = "not supported: kernel without EVM"
    sig = _sig_enforce(host, unread)
    modules_disabled = None
    r = read_value(host, "proc/sys/kernel/modules_disabled")
    if r.text is None:
        unread["modules_disabled"] = f"{r.reason}: proc/sys/kernel/modules_disabled"
    elif r.text in ("0", "1"):
        modules_disabled = r.text == "1"
    else:
        unread["modules_disabled"] = malformed(r.text)
    tpm_present, tpm_version = _tpm(host, unread)
    taint = None
    r = read_value(host, "proc/sys/kernel/tainted")
    if r.text is None:
        unread["taint"] = f"{r.reason}: proc/sys/kernel/tainted"
    elif (taint := parse_int(r.text)) is None or taint < 0:
        taint = None
        unread["taint"] = malformed(r.text)
    nv_taint = signed = None
    r = read_value(host, "sys/module/nvidia/taint")
    if r.text is None:
        why = "not supported: nvidia module not loaded" if r.reason == "missing" else r.reason
        unread["nvidia_module_taint"] = unread["nvidia_module_signed"] = why
    elif not re.fullmatch(r"[A-Z]*", r.text):
        unread["nvidia_module_taint"] = unread["nvidia_module_signed"] = malformed(r.text)
    else:
        nv_taint, signed = r.text, "E" not in r.text  # E: loaded without a valid signature
    return SecurityFacts(
        efi=efi,
        secure_boot=secure_boot,
        setup_mode=setup_mode,
        lockdown=lockdown,
        lsms=lsms,
        module_sig_enforce=sig,
        modules_disabled=modules_disabled,
        tpm_present=tpm_present,
        tpm_version=tpm_version,
        ima=ima,
        evm=evm,
        taint=taint,
        taint_flags=decode_taint(taint) if taint is not None else (),
        nvidia_module_taint=nv_taint,
        nvidia_module_signed=signed,
        unread=unread,
    )


def _efi(host: Host, unread: dict[str, str]) -> tuple[bool | None, bool | None, bool | None]:
    if host.is_dir("sys/firmware/efi"):
        efi: bool | None = True
    elif host.is_dir("sys/firmware"):
        efi = False  # booted by legacy BIOS (or a VM without UEFI firmware)
    else:
        unread["efi"] = absent(host, "sys/firmware")
        efi = None
    values: list[bool | None] = []
    for key, rel in (("secure_boot", SECURE_BOOT_VAR), ("setup_mode", SETUP_MODE_VAR)):
        if efi is not True:
            unread[key] = "not supported: not booted through EFI" if efi is False else unread["efi"]
            values.append(None)
            continue
        try:
            value = parse_efivar_bool(host.read_bytes(rel))
        except OSError as e:
            empty = not host.listdir("sys/firmware/efi/efivars")
            unread[key] = f"{reason_for(e)}: {rel}" + (" (efivarfs not mounted?)" if empty else "")
            values.append(None)
            continue
        if value is None:
            unread[key] = f"malformed: {rel} is not a 5-byte EFI boolean"
        values.append(value)
    return efi, values[0], values[1]


def _securityfs(host: Host) -> str | None:
    """None when securityfs can be read, else the reason it cannot."""
    if not host.is_dir(SECURITYFS):
        return absent(host, SECURITYFS)
    if not host.listdir(SECURITYFS):
        return f"unreadable: securityfs is not mounted at /{SECURITYFS}"
    return None


def _sig_enforce(host: Host, unread: dict[str, str]) -> bool | None:
    r = read_value(host, "sys/module/module/parameters/sig_enforce")
    if r.text in ("Y", "N"):
        return r.text == "Y"
    cmdline = host.read_value("proc/cmdline")
    from_cmdline = None if cmdline is None else cmdline_sig_enforce(cmdline)
    if from_cmdline is not None:
        return from_cmdline
    if r.text is None:
        unread["module_sig_enforce"] = f"{r.reason}: sys/module/module/parameters/sig_enforce" + (
            " (kernel without module signing?)" if r.reason == "missing" else ""
        )
    else:
        unread["module_sig_enforce"] = malformed(r.text)
    return None


def _tpm(host: Host, unread: dict[str, str]) -> tuple[bool | None, int | None]:
    if not host.is_dir("sys/class/tpm"):
        why = absent(host, "sys/class/tpm")
        if why.startswith("missing"):
            why += " (no TPM driver)"
        unread["tpm_present"] = unread["tpm_version"] = why
        return None, None
    devices = host.glob("sys/class/tpm/tpm[0-9]*")
    if not devices:
        unread["tpm_version"] = "not supported: no TPM"
        return False, None
    version = parse_int(host.read_value(f"{devices[0]}/tpm_version_major"))
    if version is None and host.exists(f"{devices[0]}/caps"):
        version = 1  # TPM 1.2 devices expose caps; tpm_version_major arrived in kernel 5.6
    if version is None:
        unread["tpm_version"] = f"missing: {devices[0]}/tpm_version_major"
    return True, version
