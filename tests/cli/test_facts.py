"""``dolmen facts --summary``: the inventory table on scenario bundles (real recordings), what a
bundle lacks named as ``not read``, never left out or read as "none"; and ``--json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dolmen.cli.facts_summary import render_summary
from dolmen.cli.main import main
from tests.hosts import scenarios
from tests.report.contract import assert_valid


def build(name: str, tmp: pytest.TempPathFactory) -> Path:
    return scenarios.build(name, tmp.mktemp(name) / "tree")


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build("h100-hgx-healthy", tmp_path_factory)


def summary(capsys: pytest.CaptureFixture[str], root: Path) -> str:
    rc = main(["facts", "--from", str(root), "--summary"])
    out, err = capsys.readouterr()
    assert rc == 0 and err == ""
    return out


def test_an_hgx_node_in_one_screen(healthy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = summary(capsys, healthy)
    lines = out.splitlines()
    assert len(lines) < 60  # `facts` without --summary prints thousands
    assert lines[0] == f"host: h100-node-01 (tree {healthy})"
    assert "GPUs: 8 (NVIDIA H100 80GB HBM3); driver 580.105.08, CUDA 13.0; from nvidia-smi" in out
    header = "  INDEX  MODEL                  BUS ID        DRIVER      SERIAL         UUID"
    assert header in lines
    row = lines[lines.index(header) + 4]
    assert row.split() == [
        "3",
        "NVIDIA",
        "H100",
        "80GB",
        "HBM3",
        "0000:86:00.0",
        "580.105.08",
        "1650000000004",
        "GPU-00000003-0000-0000-0000-000000000003",  # never cut
    ]
    assert "CPUs: 2 sockets, 112 cores, 224 threads: Intel(R) Xeon(R) Platinum 8480+" in out
    assert "InfiniBand: 9 ports (from sysfs, ibstat)" in out
    assert any(ln.split()[:4] == ["mlx5_7/1", "ACTIVE", "LinkUp", "400"] for ln in lines)
    assert "  mlx5_bond_0/1  ACTIVE  LinkUp    200 Gb/s  Ethernet" in out
    assert "  /raid      /dev/md1        ext4" in out
    assert "  NCCL               2.27.7 (/lib/x86_64-linux-gnu/libnccl.so.2)" in out
    # the bundle has no sys/class/net: not "no NICs"
    assert "NICs: not read (missing (no sys/class/net on this host))" in out


def test_a_node_whose_driver_is_gone_keeps_its_gpus(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    out = summary(capsys, build("missing-driver", tmp_path_factory))
    assert "GPUs: 8 on the PCI bus; the driver's inventory not read: command failed: " in out
    assert "  -      not read  0000:ca:00.0  not read" in out
    assert "  driver             not read (missing: proc/driver/nvidia/version" in out


def test_a_cpu_only_vm(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    out = summary(capsys, build("vm-cpu-only", tmp_path_factory))
    assert "GPUs: none found (read: PCI tree)" in out  # the bus was read: none is a finding
    assert "virtualization: kvm" in out
    assert "  eth0  up     unknown   virtio_net  0000:00:03.0  02:fc:00:00:00:01" in out
    assert "InfiniBand: not read (missing: sys/class/infiniband" in out


def test_a_pasted_file_says_what_it_did_not_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.conftest import recording

    xml = tmp_path / "nvidia-smi.xml"
    xml.write_bytes(recording("nvidia-smi-xml/k8s-test-infra__hardware__qx-a100.xml").read_bytes())
    rc = main(["facts", "--from", str(xml), "--summary"])
    out, _ = capsys.readouterr()
    assert rc == 0 and "GPUs: 1 (NVIDIA A100-SXM4-40GB); driver 570.148.08, CUDA 12.8" in out
    assert "CPUs: not read (not in this bundle)" in out  # no cpuinfo in one nvidia-smi file
    assert "NICs: not read (not in this bundle: sys/class/net)" in out
    assert "  CUDA (driver API)  12.8" in out


HEAD: dict[str, Any] = {
    "schema": "dolmen.facts/1",
    "host": {"kind": "paste", "root": "/x", "hostname": "n"},
}


def test_a_subsystem_that_failed_or_was_not_collected() -> None:
    doc = {
        **HEAD,
        "gpu": {"error": "gpu facts: ValueError: bad"},
        "cpu": {
            "sockets": None,
            "cores": 4,
            "threads": 8,
            "model_name": "X",
            "vendor": None,
            "unread": {"sockets": "missing: proc/cpuinfo"},
        },
    }
    out = render_summary(doc)
    assert "GPUs: not read: gpu facts: ValueError: bad" in out
    assert "CPUs: not read (missing: proc/cpuinfo) sockets, 4 cores, 8 threads: X (not read)" in out
    assert "NICs: not read (not collected)" in out and "os: not read (not collected)" in out


def test_json_and_summary_are_two_outputs(
    healthy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["facts", "--from", str(healthy), "--summary", "--json"]) == 2
    assert "choose one" in capsys.readouterr().err
    assert main(["facts", "--from", str(healthy), "--summary", "--only", "cpu"]) == 2
    assert "--only is for the full facts" in capsys.readouterr().err
    assert main(["facts", "--from", str(healthy), "--json", "--only", "gpu"]) == 0
    doc = assert_valid(json.loads(capsys.readouterr().out))
    assert set(doc) == {"schema", "host", "gpu"}
