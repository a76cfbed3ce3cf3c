"""Pieces of host trees for the stack checks' tests, and a one-call runner.

Real recordings where they exist (``LDCONFIG``: the linker cache of a host with
driver 515.105.01; nvidia-smi XMLs); the small files below (an NVRM line, a
proc/modules, a GPU's sysfs attributes) are synthetic, written as the kernel
prints them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from dolmen.checks import load_registry
from dolmen.checks.context import Context
from dolmen.checks.model import Finding
from dolmen.checks.runner import run_one
from dolmen.host.tree import TreeHost

REGISTRY = load_registry()
LDCONFIG = "cuda-env/nvidia-container-toolkit__rootfs-1__ldconfig-p.txt"  # driver 515.105.01
XML_T4_515 = "nvidia-smi-xml/telegraf__tesla-t4.xml"  # 515.105.01, CUDA 11.7
XML_A100_535 = "nvidia-smi-xml/telegraf__a100-sxm4-v12.xml"  # 535.54.03, CUDA 12.2
XML_H100_580 = "nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml"  # 580.105.08, CUDA 13.0
XML_GT730_384 = "nvidia-smi-xml/openpai__nvidia_smi_outdated_gpu.xml"  # 384.111, no CUDA
NVSMI = "nvidia-smi -q -x"
NVSMI_DOWN = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
    "that the latest NVIDIA driver is installed and running.\n"
)
OS_RELEASE = {
    "ubuntu": 'ID=ubuntu\nID_LIKE=debian\nVERSION_ID="22.04"\n',
    "debian": 'ID=debian\nVERSION_ID="12"\n',
    "rocky": 'ID="rocky"\nID_LIKE="rhel centos fedora"\nVERSION_ID="9.4"\n',
    "sles": 'ID="sles"\nID_LIKE="suse"\nVERSION_ID="15.6"\n',
    "arch": "ID=arch\n",
}


def nvrm(version: str, open_modules: bool = True) -> str:
    """/proc/driver/nvidia/version as the driver prints it (open or proprietary modules)."""
    kind = "Open Kernel Module for x86_64" if open_modules else "x86_64 Kernel Module"
    return (
        f"NVRM version: NVIDIA UNIX {kind}  {version}  Release Build  "
        "(dvs-builder@U22-I3-AF03-09-1)  Thu Oct 30 02:05:51 UTC 2025\n"
        "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
    )


def modules(*names: str) -> str:
    """proc/modules with ``names`` loaded (NVIDIA ones tainted POE, as the driver does)."""
    lines = []
    for n in names:
        taint = " (POE)" if n.startswith(("nvidia", "gdrdrv")) else ""
        lines.append(f"{n} 16384 0 - Live 0x0000000000000000{taint}")
    return "\n".join(lines) + "\n"


def gpus_on_bus(n: int = 1) -> dict[str, str]:
    """sysfs attributes of ``n`` H100 SXM functions (10de:2330, class 3D controller)."""
    files: dict[str, str] = {}
    for i in range(n):
        dev = f"sys/bus/pci/devices/0000:{0x18 + i * 0x11:02x}:00.0"
        files |= {f"{dev}/vendor": "0x10de\n", f"{dev}/class": "0x030200\n"}
        files[f"{dev}/device"] = "0x2330\n"
    return files


def environment(env: Mapping[str, str]) -> dict[str, str]:
    """A dolmen-snapshot.json recording the session's environment."""
    return {"dolmen-snapshot.json": json.dumps({"environment": dict(env)})}


def unreadable(paths: Mapping[str, str]) -> dict[str, str]:
    """A dolmen-snapshot.json saying the live host refused these reads (errno names)."""
    return {"dolmen-snapshot.json": json.dumps({"unreadable": dict(paths)})}


def link(root: Path, rel: str, target: str) -> None:
    """A symbolic link in the tree (``target`` as the link stores it)."""
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, p)


def run(root: Path, check_id: str) -> list[Finding]:
    """The findings of one registered check on a host tree."""
    findings = run_one(Context(TreeHost(root)), REGISTRY[check_id])
    subjects = [f.subject for f in findings]
    assert len(subjects) == len(set(subjects)), f"subjects repeat: {subjects}"
    return findings


def by_subject(findings: list[Finding]) -> dict[str, Finding]:
    """Findings keyed by subject."""
    return {f.subject: f for f in findings}
