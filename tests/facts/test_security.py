"""Security facts: EFI variables, lockdown, LSMs, IMA/EVM, module signing, TPM, taint and
the nvidia module's signature; tree hosts, malformed inputs and a live smoke test.

No recording of these files exists in ../shared (PROVENANCE.md): the trees below are
synthetic, built from the formats the kernel documents (efivarfs: 4 attribute bytes then
the value; securityfs lockdown/lsm; tainted-kernels.rst bits). On this VM there is no EFI,
no TPM and securityfs is not mounted, so the live test expects honest unknowns there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.facts import security, to_jsonable
from dolmen.facts.security import (
    EFI_GLOBAL,
    cmdline_sig_enforce,
    decode_taint,
    parse_efivar_bool,
    parse_lockdown,
    parse_lsm,
)
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording

SB = f"sys/firmware/efi/efivars/SecureBoot-{EFI_GLOBAL}"
SETUP = f"sys/firmware/efi/efivars/SetupMode-{EFI_GLOBAL}"
FIELDS = (
    "efi",
    "secure_boot",
    "setup_mode",
    "lockdown",
    "lsms",
    "module_sig_enforce",
    "modules_disabled",
    "tpm_present",
    "tpm_version",
    "ima",
    "evm",
    "taint",
    "nvidia_module_taint",
    "nvidia_module_signed",
)


def _none_fields_have_reasons(facts: security.SecurityFacts) -> None:
    for name in FIELDS:
        if getattr(facts, name) is None:
            assert facts.unread.get(name), f"{name} is None without a reason"


@pytest.mark.parametrize(
    ("data", "value"),
    [
        (b"\x06\x00\x00\x00\x01", True),
        (b"\x06\x00\x00\x00\x00", False),
        (b"\x06\x00\x00\x00", None),
        (b"", None),
        (b"\x06\x00\x00\x00\x07", None),
    ],
)
def test_efivar_bool(data: bytes, value: bool | None) -> None:
    assert parse_efivar_bool(data) is value


@pytest.mark.parametrize(
    ("text", "mode"),
    [
        ("none [integrity] confidentiality\n", "integrity"),
        ("[none] integrity confidentiality", "none"),
        ("none integrity [confidentiality]", "confidentiality"),
        ("integrity", None),
        ("[none] [integrity]", None),
        ("", None),
        ("\x00\xff", None),
    ],
)
def test_lockdown(text: str, mode: str | None) -> None:
    assert parse_lockdown(text) == mode


def test_lsm() -> None:
    assert parse_lsm("lockdown,capability,landlock,yama,apparmor\n") == (
        "lockdown",
        "capability",
        "landlock",
        "yama",
        "apparmor",
    )
    assert parse_lsm("") is None
    assert parse_lsm("\x00bad,LSM!") is None


@pytest.mark.parametrize(
    ("mask", "letters"),
    [
        (0, ""),
        (4096, "O"),
        (1 | 4096 | 8192, "POE"),  # a typical host with the proprietary nvidia module
        (1 << 9, "W"),
        (1 << 25, "?"),
    ],
)
def test_decode_taint(mask: int, letters: str) -> None:
    assert "".join(f.letter for f in decode_taint(mask)) == letters


def test_cmdline_sig_enforce() -> None:
    cmdline = recording("procfs/procfs__fixtures_extracted/fixtures/proc/cmdline").read_text()
    assert cmdline_sig_enforce(cmdline) is None  # a real Ubuntu command line says nothing
    assert cmdline_sig_enforce(cmdline + " module.sig_enforce=1") is True
    assert cmdline_sig_enforce("module.sig_enforce") is True
    assert cmdline_sig_enforce("module.sig_enforce=0 quiet") is False


def test_collect_hardened_host(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        files={
            SB: b"\x06\x00\x00\x00\x01",
            SETUP: b"\x06\x00\x00\x00\x00",
            "sys/kernel/security/lockdown": "none [integrity] confidentiality\n",
            "sys/kernel/security/lsm": "lockdown,capability,yama,apparmor,ima,evm\n",
            "sys/kernel/security/ima/policy": "",
            "sys/kernel/security/evm": "0\n",
            "sys/module/module/parameters/sig_enforce": "Y\n",
            "proc/sys/kernel/modules_disabled": "0\n",
            "sys/class/tpm/tpm0/tpm_version_major": "2\n",
            "proc/sys/kernel/tainted": "12289\n",
            "sys/module/nvidia/taint": "POE\n",
        },
    )
    facts = security.collect(TreeHost(root))
    assert (facts.efi, facts.secure_boot, facts.setup_mode) == (True, True, False)
    assert facts.lockdown == "integrity" and facts.lsms is not None and "apparmor" in facts.lsms
    assert facts.ima is True and facts.evm == 0
    assert facts.module_sig_enforce is True and facts.modules_disabled is False
    assert (facts.tpm_present, facts.tpm_version) == (True, 2)
    assert facts.taint == 12289 and [f.letter for f in facts.taint_flags] == ["P", "O", "E"]
    assert facts.nvidia_module_taint == "POE" and facts.nvidia_module_signed is False
    assert facts.unread == {}
    json.dumps(to_jsonable(facts))


def test_collect_signed_module_tpm12_and_cmdline(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        files={
            "sys/firmware/efi/efivars/.keep": "",
            "sys/class/tpm/tpm0/caps": "Manufacturer: 0x49465800\n",
            "sys/module/nvidia/taint": "PO\n",
            "proc/cmdline": "BOOT_IMAGE=/vmlinuz ro module.sig_enforce=1\n",
        },
    )
    facts = security.collect(TreeHost(root))
    assert facts.efi is True and facts.secure_boot is None
    assert facts.unread["secure_boot"].startswith("missing")
    assert facts.tpm_version == 1 and facts.nvidia_module_signed is True
    assert facts.module_sig_enforce is True
    assert facts.lockdown is None and facts.unread["lockdown"].startswith("missing")
    _none_fields_have_reasons(facts)


def test_collect_unmounted_securityfs_and_no_tpm(tmp_path: Path) -> None:
    """The shape of this VM: no EFI, empty sys/kernel/security, no sys/class/tpm."""
    root = make_tree(
        tmp_path, files={"sys/firmware/acpi/.keep": "", "proc/sys/kernel/tainted": "0"}
    )
    (root / "sys/kernel/security").mkdir(parents=True)
    (root / "sys/class").mkdir(parents=True)
    facts = security.collect(TreeHost(root))
    assert facts.efi is False
    assert facts.unread["secure_boot"].startswith("not supported")
    assert facts.lockdown is None and "not mounted" in facts.unread["lockdown"]
    assert facts.lsms is None and facts.ima is None
    assert facts.tpm_present is None and facts.unread["tpm_present"].startswith("missing")
    assert facts.taint == 0 and facts.taint_flags == ()
    assert facts.unread["nvidia_module_signed"].startswith("not supported")
    _none_fields_have_reasons(facts)


def test_collect_empty_tpm_class_means_no_tpm(tmp_path: Path) -> None:
    root = make_tree(tmp_path)
    (root / "sys/class/tpm").mkdir(parents=True)
    facts = security.collect(TreeHost(root))
    assert facts.tpm_present is False and facts.tpm_version is None


@pytest.mark.parametrize("junk", [b"", b"\x00\xff\xfe", b"-1", b"integrity", b"yes"])
def test_collect_malformed(tmp_path: Path, junk: bytes) -> None:
    root = make_tree(
        tmp_path,
        files={
            SB: junk,
            "sys/kernel/security/lockdown": junk,
            "sys/kernel/security/lsm": junk,
            "sys/module/module/parameters/sig_enforce": junk,
            "proc/sys/kernel/modules_disabled": junk,
            "proc/sys/kernel/tainted": junk,
            "sys/module/nvidia/taint": junk + b"!",
            "sys/class/tpm/tpm0/tpm_version_major": junk,
        },
    )
    facts = security.collect(TreeHost(root))
    assert facts.secure_boot is None and facts.unread["secure_boot"].startswith("malformed")
    assert facts.lockdown is None and facts.taint is None and facts.nvidia_module_signed is None
    assert facts.unread["taint"].startswith("malformed")
    _none_fields_have_reasons(facts)


def test_live_smoke() -> None:
    facts = security.collect(LiveHost())
    _none_fields_have_reasons(facts)
    if Path("/proc/sys/kernel/tainted").exists():
        assert facts.taint is not None
    if not Path("/sys/firmware/efi").exists():
        assert facts.secure_boot is None
    json.dumps(to_jsonable(facts))
