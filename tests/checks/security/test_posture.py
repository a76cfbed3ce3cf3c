"""security.* checks on host trees, and on this machine.

No recording of EFI variables, securityfs, TPM sysfs or taint files exists in
../shared/recordings: the trees below are synthetic, in the formats the kernel
uses (efivarfs: 4 attribute bytes then the value; ``none [integrity]
confidentiality``; a decimal taint mask). This VM itself is the real case of a host
without EFI, TPM or a mounted securityfs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.checks import load_registry
from dolmen.checks.context import Context
from dolmen.checks.model import Finding, Status
from dolmen.checks.runner import run_one
from dolmen.facts.security import SECURE_BOOT_VAR, SETUP_MODE_VAR
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree

REGISTRY = load_registry()
SECURITY = sorted(cid for cid in REGISTRY if cid.startswith("security."))
EFI_ON = b"\x06\x00\x00\x00\x01"
EFI_OFF = b"\x06\x00\x00\x00\x00"
LSM = "lockdown,capability,landlock,yama,apparmor\n"
GPU = {
    "sys/bus/pci/devices/0000:18:00.0/vendor": "0x10de\n",
    "sys/bus/pci/devices/0000:18:00.0/class": "0x030200\n",
}


def _one(root: Path, cid: str) -> Finding:
    [f] = run_one(Context(TreeHost(root)), REGISTRY[cid])
    assert not f.gating and f.subject == "host"
    return f


def _efi(secure_boot: bytes, setup_mode: bytes = EFI_OFF) -> dict[str, str | bytes]:
    return {SECURE_BOOT_VAR: secure_boot, SETUP_MODE_VAR: setup_mode}


def _securityfs(lockdown: str, ima: bool = True) -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {
        "sys/kernel/security/lockdown": lockdown,
        "sys/kernel/security/lsm": LSM,
    }
    if ima:
        files["sys/kernel/security/integrity/ima/policy"] = ""
        files["sys/kernel/security/integrity/evm/evm"] = "0\n"
    return files


@pytest.mark.parametrize("cid", SECURITY)
def test_every_security_check_is_advisory_and_unknown_on_an_empty_tree(
    cid: str, tmp_path: Path
) -> None:
    assert not REGISTRY[cid].gating
    f = _one(make_tree(tmp_path), cid)
    assert f.status in (Status.UNKNOWN, Status.SKIP), f.summary


# --- security.secure_boot -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "status", "words"),
    [
        (_efi(EFI_ON), Status.PASS, "Secure Boot is enabled"),
        (_efi(EFI_OFF), Status.WARN, "Secure Boot is off"),
        (_efi(EFI_OFF, EFI_ON), Status.WARN, "Setup Mode"),
        ({"sys/firmware/acpi/tables/DSDT": ""}, Status.UNKNOWN, "not booted through EFI"),
        ({SECURE_BOOT_VAR: b"\x06\x00", "x": ""}, Status.UNKNOWN, "malformed"),
    ],
)
def test_secure_boot(
    tmp_path: Path, files: dict[str, str | bytes], status: Status, words: str
) -> None:
    f = _one(make_tree(tmp_path, files=files), "security.secure_boot")
    assert f.status is status and words in f.summary


# --- security.tpm ---------------------------------------------------------------------------


def test_tpm(tmp_path: Path) -> None:
    f = _one(
        make_tree(tmp_path / "a", {"sys/class/tpm/tpm0/tpm_version_major": "2\n"}), "security.tpm"
    )
    assert f.status is Status.PASS and f.evidence["tpm_version"] == 2
    f = _one(
        make_tree(tmp_path / "b", {"sys/class/tpm/tpm0/caps": "Manufacturer: 0x0\n"}),
        "security.tpm",
    )
    assert f.status is Status.WARN and "TPM 1.2" in f.summary
    empty = make_tree(tmp_path / "c")
    (empty / "sys/class/tpm").mkdir(parents=True)
    f = _one(empty, "security.tpm")
    assert f.status is Status.WARN and "no TPM" in f.summary
    f = _one(make_tree(tmp_path / "d", {"sys/class/net/lo/mtu": "65536\n"}), "security.tpm")
    assert f.status is Status.UNKNOWN and "no TPM driver" in f.summary


# --- security.lockdown ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lockdown", "status"),
    [
        ("none [integrity] confidentiality\n", Status.PASS),
        ("none integrity [confidentiality]\n", Status.PASS),
        ("[none] integrity confidentiality\n", Status.WARN),
        ("garbage\n", Status.UNKNOWN),
    ],
)
def test_lockdown(tmp_path: Path, lockdown: str, status: Status) -> None:
    f = _one(make_tree(tmp_path, files=_securityfs(lockdown)), "security.lockdown")
    assert f.status is status


def test_lockdown_securityfs_not_mounted(tmp_path: Path) -> None:
    root = make_tree(tmp_path)
    (root / "sys/kernel/security").mkdir(parents=True)
    f = _one(root, "security.lockdown")
    assert f.status is Status.UNKNOWN and "not mounted" in f.summary


# --- security.module_signing ----------------------------------------------------------------

NVIDIA_LOADED = {
    **GPU,
    "proc/modules": "nvidia 11456512 158 - Live 0x0000000000000000 (POE)\n",
    "sys/module/nvidia/taint": "POE\n",
}


@pytest.mark.parametrize(
    ("files", "status", "words"),
    [
        (
            {
                "sys/module/module/parameters/sig_enforce": "Y\n",
                **NVIDIA_LOADED,
                "sys/module/nvidia/taint": "PO\n",
            },
            Status.PASS,
            "enforced (sig_enforce) and the nvidia module is signed",
        ),
        (
            {"sys/module/module/parameters/sig_enforce": "Y\n", **NVIDIA_LOADED},
            Status.WARN,
            "carries taint E (unsigned)",
        ),
        (
            {"proc/sys/kernel/modules_disabled": "1\n"},
            Status.PASS,
            "module loading is disabled",
        ),
        (
            {**_securityfs("none [integrity] confidentiality\n"), **GPU, "proc/modules": ""},
            Status.WARN,
            "an unsigned nvidia module is refused at load time",
        ),
        (
            {
                "sys/module/module/parameters/sig_enforce": "N\n",
                **_efi(EFI_OFF),
                **NVIDIA_LOADED,
            },
            Status.WARN,
            "the nvidia module is unsigned (taint E) and signatures are not enforced: on a "
            "Secure Boot host it will not load",
        ),
        (
            {"sys/module/module/parameters/sig_enforce": "N\n"},
            Status.WARN,
            "module signatures are not enforced",
        ),
        ({"proc/cmdline": "ro quiet\n"}, Status.UNKNOWN, "sig_enforce"),
    ],
)
def test_module_signing(
    tmp_path: Path, files: dict[str, str | bytes], status: Status, words: str
) -> None:
    f = _one(make_tree(tmp_path, files=files), "security.module_signing")
    assert f.status is status and words in f.summary
    if status is Status.WARN:
        assert f.remedy and "mokutil --import" in f.remedy


# --- security.kernel_taint ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mask", "modules", "status", "words"),
    [
        ("0", "", Status.PASS, "not tainted"),
        (
            "12289",  # P + O + E
            NVIDIA_LOADED["proc/modules"],
            Status.PASS,
            "as the NVIDIA modules' own taints (EOP) explain",
        ),
        ("4096", "", Status.PASS, "third-party or unsigned modules"),
        ("12801", NVIDIA_LOADED["proc/modules"], Status.WARN, "W (kernel issued a warning)"),
        ("16", "", Status.WARN, "M (machine check exception occurred)"),
        ("-3", "", Status.UNKNOWN, "malformed"),
    ],
)
def test_kernel_taint(tmp_path: Path, mask: str, modules: str, status: Status, words: str) -> None:
    files = {"proc/sys/kernel/tainted": f"{mask}\n", "proc/modules": modules}
    f = _one(make_tree(tmp_path, files=files), "security.kernel_taint")
    assert f.status is status and words in f.summary, f.summary
    if status is not Status.UNKNOWN:
        assert f.evidence["taint"] == int(mask)


# --- security.ima ---------------------------------------------------------------------------


def test_ima(tmp_path: Path) -> None:
    lockdown = "[none] integrity confidentiality\n"
    f = _one(make_tree(tmp_path / "a", files=_securityfs(lockdown)), "security.ima")
    assert f.status is Status.PASS and "EVM not initialised" in f.summary
    f = _one(make_tree(tmp_path / "b", files=_securityfs(lockdown, ima=False)), "security.ima")
    assert f.status is Status.WARN and "no IMA" in f.summary
    f = _one(make_tree(tmp_path / "c"), "security.ima")
    assert f.status is Status.UNKNOWN


# --- this machine ---------------------------------------------------------------------------


@pytest.mark.parametrize("cid", SECURITY)
def test_live_host_is_never_failed_nor_errored(cid: str) -> None:
    """On the live host (this VM: no EFI, no TPM, securityfs unmounted) every posture check
    answers, advisory, never fail or error; what is not there is unknown, never pass."""
    host = LiveHost()
    [f] = run_one(Context(host), REGISTRY[cid])
    assert f.status not in (Status.FAIL, Status.ERROR), f.summary
    if cid == "security.secure_boot" and not Path("/sys/firmware/efi").is_dir():
        assert f.status is Status.UNKNOWN
    if cid == "security.tpm" and not Path("/sys/class/tpm").is_dir():
        assert f.status is Status.UNKNOWN


# --- the remedies for NVIDIA's out-of-tree modules ------------------------------------------


@pytest.mark.parametrize(
    ("cid", "files", "words"),
    [
        # Secure Boot off: enrol the DKMS key before turning it on
        (
            "security.secure_boot",
            _efi(EFI_OFF),
            ("mokutil --import /var/lib/dkms/mok.pub", "MokManager", "--test-key"),
        ),
        # lockdown off: what lockdown=integrity will do to an unsigned nvidia.ko
        (
            "security.lockdown",
            _securityfs("[none] integrity confidentiality\n"),
            ("unsigned module loading is restricted", "no GPU", "mokutil --import"),
        ),
        # lockdown on and no nvidia module: the kernel's refusal, and the MOK steps
        (
            "security.module_signing",
            {**_securityfs("none [integrity] confidentiality\n"), **GPU, "proc/modules": ""},
            ("lockdown=integrity makes the kernel refuse", "Enroll MOK"),
        ),
        # sig_enforce (not lockdown): the MOK steps without the lockdown paragraph
        (
            "security.module_signing",
            {"sys/module/module/parameters/sig_enforce": "Y\n", **NVIDIA_LOADED},
            ("modinfo -F signer nvidia",),
        ),
        # no IMA: what appraisal would do to nvidia.ko
        (
            "security.ima",
            _securityfs("[none] integrity confidentiality\n", ima=False),
            ("func=MODULE_CHECK", "evmctl ima_sign", "attest verify"),
        ),
    ],
    ids=["secure-boot", "lockdown", "signing-under-lockdown", "signing-sig-enforce", "ima"],
)
def test_warnings_carry_the_nvidia_module_remedies(
    tmp_path: Path, cid: str, files: dict[str, str | bytes], words: tuple[str, ...]
) -> None:
    f = _one(make_tree(tmp_path, files=files), cid)
    assert f.status is Status.WARN and f.remedy
    for word in words:
        assert word in f.remedy, (word, f.remedy)
    if words == ("modinfo -F signer nvidia",):
        assert "lockdown=integrity makes" not in f.remedy


@pytest.mark.parametrize(
    "cid", ["security.secure_boot", "security.lockdown", "security.module_signing", "security.ima"]
)
def test_the_remedies_keep_the_truth_rules_without_posture_files(cid: str, tmp_path: Path) -> None:
    """No securityfs, no efivars (this machine): unknown, never a warning about NVIDIA."""
    f = _one(make_tree(tmp_path, files={"proc/cmdline": "ro quiet\n"}), cid)
    assert f.status is Status.UNKNOWN
