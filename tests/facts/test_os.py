"""OS facts: os-release, command line, uptime/btime, virtualization hints, DMI; trees and live."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.facts import os as osf
from dolmen.facts import to_jsonable
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording
from tests.facts.trees import extract_ttar

PROCFS = "procfs/procfs__fixtures_extracted/fixtures"

UBUNTU_2204 = """PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
UBUNTU_CODENAME=jammy
"""
RHEL_9 = """NAME="Red Hat Enterprise Linux"
VERSION="9.3 (Plow)"
ID="rhel"
ID_LIKE="fedora"
VERSION_ID="9.3"
PRETTY_NAME="Red Hat Enterprise Linux 9.3 (Plow)"
# a comment
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (UBUNTU_2204, ("ubuntu", "22.04", "jammy", ("debian",))),
        (RHEL_9, ("rhel", "9.3", None, ("fedora",))),
        ('ID=debian\nVERSION_ID="12\n', ("debian", "12", None, ())),  # unbalanced quote
    ],
)
def test_parse_os_release(text: str, expected: tuple[object, ...]) -> None:
    d = osf.parse_os_release(text)
    assert d is not None
    assert (d.id, d.version_id, d.codename, d.id_like) == expected


@pytest.mark.parametrize("text", ["", "\n\n", "garbage without equals\n", "\x00\xff\x01"])
def test_parse_os_release_malformed(text: str) -> None:
    assert osf.parse_os_release(text) is None


def test_parse_os_release_live_file() -> None:
    text = Path("/etc/os-release").read_text()
    d = osf.parse_os_release(text)
    assert d is not None and d.id and f"ID={d.id}" in text.replace('"', "")


def test_parse_cmdline_recorded() -> None:
    text = recording(f"{PROCFS}/proc/cmdline").read_text()
    tokens = osf.parse_cmdline(text)
    assert tokens[0] == "BOOT_IMAGE=/vmlinuz-5.11.0-22-generic"
    assert tokens == tuple(text.split())  # no quotes in it: plain whitespace split
    params = osf.kernel_params(tokens)
    assert params["root"] == "UUID=456a0345-450d-4f7b-b7c9-43e3241d99ad"
    assert params["ro"] is None and params["vt.handoff"] == "7"


def test_parse_cmdline_quotes_and_init_args() -> None:
    tokens = osf.parse_cmdline('ro dyndbg="file nv.c +p"  iommu=pt -- --init-flag x\n')
    assert tokens == ("ro", "dyndbg=file nv.c +p", "iommu=pt", "--", "--init-flag", "x")
    params = osf.kernel_params(tokens)
    assert params == {"ro": None, "dyndbg": "file nv.c +p", "iommu": "pt"}
    assert osf.kernel_params(osf.parse_cmdline("a=1 a=2")) == {"a": "2"}  # last wins
    assert osf.parse_cmdline("") == ()
    assert osf.parse_cmdline('x="unterminated') == ("x=unterminated",)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("589.83 1121.45\n", 589.83), ("12", 12.0), ("", None), ("abc 1", None), ("\x00", None)],
)
def test_parse_uptime(text: str, expected: float | None) -> None:
    assert osf.parse_uptime(text) == expected


def test_parse_btime_recorded() -> None:
    text = recording(f"{PROCFS}/proc/stat").read_text()
    assert osf.parse_btime(text) == 1418183276
    assert osf.parse_btime(text.replace("btime", "xtime")) is None
    assert osf.parse_btime("btime notanumber\n") is None
    assert osf.parse_btime("") is None


def test_hypervisor_flag_recorded_bare_metal_and_arm() -> None:
    text = recording(f"{PROCFS}/proc/cpuinfo").read_text()
    assert osf.cpuinfo_has_hypervisor(text) is False  # an Intel laptop, bare metal
    arm = "processor\t: 0\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\n"
    assert osf.cpuinfo_has_hypervisor(arm) is None
    assert osf.cpuinfo_has_hypervisor("flags\t\t: fpu hypervisor sse\n") is True


@pytest.mark.parametrize(
    ("dmi", "expected"),
    [
        (osf.Dmi(sys_vendor="Dell Inc.", product_name="PowerEdge R6515"), None),
        (osf.Dmi(sys_vendor="QEMU", product_name="Standard PC (Q35 + ICH9, 2009)"), "qemu"),
        (osf.Dmi(sys_vendor="Amazon EC2", product_name="p5.48xlarge"), "amazon"),
        (osf.Dmi(sys_vendor="Amazon EC2", product_name="c5.metal"), "none"),
        (osf.Dmi(sys_vendor="Microsoft Corporation", product_name="Virtual Machine"), "microsoft"),
        (osf.Dmi(sys_vendor="Google", product_name="Google Compute Engine"), "google"),
        (osf.Dmi(sys_vendor="Red Hat", product_name="KVM"), "kvm"),
        (osf.Dmi(), None),
    ],
)
def test_virt_from_dmi(dmi: osf.Dmi, expected: str | None) -> None:
    assert osf.virt_from_dmi(dmi) == expected


@pytest.fixture(scope="module")
def procfs_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    archive = recording("procfs/procfs__fixtures.ttar")
    return extract_ttar(archive, tmp_path_factory.mktemp("procfs"), strip="fixtures/")


def test_collect_recorded_tree_without_commands(procfs_tree: Path) -> None:
    facts = osf.collect(TreeHost(procfs_tree))
    assert facts.boot_time == 1418183276
    assert facts.kernel_params["vt.handoff"] == "7"
    assert facts.dmi is not None and facts.dmi.product_name == "PowerEdge R6515"
    assert facts.dmi.sys_vendor == "Dell Inc." and facts.dmi.chassis_type == "23"
    # No systemd-detect-virt recorded: DMI names no hypervisor, cpuinfo has no flag.
    assert (facts.virtualization, facts.virtualization_source) == ("none", "dmi+cpuinfo")
    assert facts.hypervisor_flag is False
    # What the tree lacks is None with a reason, never a guess.
    # The tree recorded proc/ and sys/ but no commands/ and no etc/: not in this bundle.
    assert facts.kernel_release is None and facts.unread["kernel_release"] == "missing"
    assert facts.architecture is None
    assert facts.unread["architecture"] == "not in this bundle: uname -m"
    assert facts.distribution is None and facts.unread["distribution"] == "not in this bundle"
    assert facts.container is None and "unknown" in facts.unread["container"]


def test_collect_tree_with_commands(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        files={
            "etc/os-release": UBUNTU_2204,
            "proc/sys/kernel/osrelease": "5.15.0-101-generic\n",
            "proc/sys/kernel/version": "#111-Ubuntu SMP Tue Mar 5 20:16:58 UTC 2024\n",
            "proc/sys/kernel/hostname": "gpu-a01\n",
            "proc/uptime": "1234.50 99.00\n",
            "proc/cmdline": "ro iommu=pt\n",
            "proc/cpuinfo": "processor\t: 0\nflags\t\t: fpu hypervisor\n",
        },
        commands={
            "uname -m": "x86_64\n",
            "systemd-detect-virt --vm": "none\n",  # disagrees with the flag: the tool wins
            "systemd-detect-virt --container": ("none\n", 1),
        },
    )
    facts = osf.collect(TreeHost(root))
    assert facts.distribution is not None and facts.distribution.version_id == "22.04"
    assert facts.kernel_release == "5.15.0-101-generic"
    assert facts.architecture == "x86_64" and facts.hostname == "gpu-a01"
    assert facts.virtualization == "none" and facts.virtualization_source == "systemd-detect-virt"
    assert facts.container == "none" and facts.hypervisor_flag is True
    assert facts.uptime_s == 1234.5 and facts.kernel_params == {"ro": None, "iommu": "pt"}
    assert facts.unread["dmi"] == "not in this bundle: sys/class/dmi/id"  # no sys/ recorded


def test_collect_empty_and_junk_tree(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        files={
            "proc/uptime": b"\xff\xfe\x00",
            "proc/stat": "cpu 1 2 3\n",
            "proc/sys/kernel/osrelease": "",
            "etc/os-release": "\x00\x01",
            "sys/class/dmi/id/sys_vendor": "QEMU\n",
            "proc/cpuinfo": "",
        },
        commands={"systemd-detect-virt --vm": ("", 2, "Failed to check for virtualization")},
    )
    facts = osf.collect(TreeHost(root))
    assert facts.uptime_s is None and facts.unread["uptime_s"].startswith("malformed")
    assert facts.boot_time is None and facts.unread["boot_time"].startswith("malformed")
    assert facts.kernel_release is None and "empty" in facts.unread["kernel_release"]
    assert facts.distribution is None and facts.unread["distribution"].startswith("malformed")
    # The tool failed, so DMI decides; other DMI files are missing and said so.
    assert (facts.virtualization, facts.virtualization_source) == ("qemu", "dmi")
    assert facts.unread["dmi.product_name"] == "missing"


def test_live_smoke() -> None:
    facts = osf.collect(LiveHost())
    assert json.loads(json.dumps(to_jsonable(facts)))  # dolmen facts --json
    assert facts.kernel_release and facts.kernel_release[0].isdigit()
    assert facts.architecture in ("x86_64", "aarch64")
    assert facts.distribution is not None and facts.distribution.id
    assert facts.uptime_s is not None and facts.uptime_s > 0
    assert facts.boot_time is not None and facts.boot_time > 1_500_000_000
    assert facts.cmdline is not None and facts.hostname
    assert facts.virtualization is not None or "virtualization" in facts.unread
