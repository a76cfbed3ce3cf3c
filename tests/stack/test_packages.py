"""The package database parsers: dpkg status, ``dpkg -l``, ``rpm -qa --qf``, upstream."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.host.tree import TreeHost
from dolmen.stack.packages import (
    parse_dpkg_l,
    parse_dpkg_status,
    parse_rpm_qa,
    read_packages,
    upstream,
)
from tests.conftest import make_tree

# The shape of a dpkg status file on Ubuntu 22.04 with NVIDIA's CUDA repository.
STATUS = """\
Package: libnccl2
Status: hold ok installed
Priority: optional
Section: libs
Installed-Size: 251245
Maintainer: cudatools <cudatools@nvidia.com>
Architecture: amd64
Source: nccl
Version: 2.21.5-1+cuda12.4
Description: NVIDIA Collective Communication Library (NCCL) Runtime
 NCCL (pronounced "Nickel") is a stand-alone library of standard collective
 communication routines for GPUs.

Package: datacenter-gpu-manager
Status: install ok installed
Architecture: amd64
Version: 1:3.3.5
Description: NVIDIA DCGM

Package: nvidia-driver-535
Status: deinstall ok config-files
Architecture: amd64
Version: 535.183.01-0ubuntu1
Description: removed, configuration files left

Package: nvidia-driver-550-open
Status: install ok installed
Architecture: amd64
Version: 550.127.05-0ubuntu1
Conffiles:
 /etc/modprobe.d/nvidia.conf 0123456789abcdef
Description: NVIDIA driver metapackage
"""


def test_dpkg_status_keeps_installed_packages_and_holds() -> None:
    db = parse_dpkg_status(STATUS)
    assert set(db) == {"libnccl2", "datacenter-gpu-manager", "nvidia-driver-550-open"}
    assert db["libnccl2"].held and db["libnccl2"].version == "2.21.5-1+cuda12.4"
    assert not db["datacenter-gpu-manager"].held
    assert db["datacenter-gpu-manager"].version == "1:3.3.5"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "garbage\x00\x01 with no fields",
        STATUS[:40],  # cut inside the first stanza: no Version yet
        "Package: ../../etc/passwd\nStatus: install ok installed\nVersion: 1\n",
        "Package: x\nStatus: install ok\nVersion: 1\n",  # two-word status
        "Package: x\nVersion: 1\n",  # no status
    ],
)
def test_dpkg_status_malformed_truncated_hostile(text: str) -> None:
    assert parse_dpkg_status(text) == {}


DPKG_L = """\
Desired=Unknown/Install/Remove/Purge/Hold
| Status=Not/Inst/Conf-files/Unpacked/halF-conf/Half-inst/trig-aWait/Trig-pend
|/ Err?=(none)/Reinst-required (Status,Err: uppercase=bad)
||/ Name                          Version                 Architecture Description
+++-=============================-=======================-============-==============
ii  adduser                       3.118ubuntu5            all          add and remove users
hi  libnccl2:amd64                2.21.5-1+cuda12.4       amd64        NVIDIA NCCL runtime
rc  nvidia-driver-535             535.183.01-0ubuntu1     amd64        NVIDIA driver
iU  half-unpacked                 1.0                     amd64        broken
"""


def test_dpkg_l_rows() -> None:
    db = parse_dpkg_l(DPKG_L)
    assert set(db) == {"adduser", "libnccl2"}
    assert db["libnccl2"].held and db["libnccl2"].version == "2.21.5-1+cuda12.4"
    assert parse_dpkg_l("Desired=Unknown\nnot a table\n") == {}


def test_rpm_qa_rows() -> None:
    text = (
        "nvidia-driver\t3:550.127.05-1.el9\n"
        "libnccl\t0:2.21.5-1+cuda12.4\n"
        "kernel-core\t0:5.14.0-427.13.1.el9_4\n"
        "junk line\n\tno-name\n"
    )
    db = parse_rpm_qa(text)
    assert db["nvidia-driver"].version == "3:550.127.05-1.el9"
    assert db["libnccl"].version == "2.21.5-1+cuda12.4" and db["libnccl"].manager == "dnf"
    assert set(db) == {"nvidia-driver", "libnccl", "kernel-core"}


@pytest.mark.parametrize(
    ("version", "want"),
    [
        ("550.54.15-0ubuntu1", "550.54.15"),
        ("1:3.3.5", "3.3.5"),
        ("2.21.5-1+cuda12.4", "2.21.5"),
        ("3:550.127.05-1.el9", "550.127.05"),
        ("1.14.6-1", "1.14.6"),
        ("12.4.1", "12.4.1"),
    ],
)
def test_upstream(version: str, want: str) -> None:
    assert upstream(version) == want


def test_read_packages_sources_and_reasons(tmp_path: Path) -> None:
    host = TreeHost(make_tree(tmp_path / "a", files={"var/lib/dpkg/status": STATUS}))
    db = read_packages(host)
    assert db.manager == "apt" and db.source == "var/lib/dpkg/status" and "libnccl2" in db.installed
    host = TreeHost(make_tree(tmp_path / "b", commands={"dpkg -l": DPKG_L}))
    assert read_packages(host).source == "dpkg -l"
    host = TreeHost(make_tree(tmp_path / "c", files={"etc/os-release": "ID=rhel\n"}))
    db = read_packages(host)
    assert db.manager is None and "no package database" in db.reason
    host = TreeHost(make_tree(tmp_path / "d", files={"var/lib/dpkg/status": "junk\n"}))
    db = read_packages(host)
    assert db.manager is None and "malformed" in db.reason
