"""system.memory, system.numa and system.kernel on the H100 scenario, procfs's recorded
meminfo and node_exporter's recorded NUMA/PCI tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.checks.model import Status
from tests.checks.helpers import by_subject, run_check
from tests.conftest import make_tree, recording
from tests.facts.trees import extract_ttar
from tests.hosts import scenarios

GPU = "sys/bus/pci/devices/0000:{bus}:00.0/numa_node"


@pytest.fixture
def node(tmp_path: Path) -> Path:
    return scenarios.build("h100-hgx-healthy", tmp_path / "node")


def test_memory_healthy_and_expected_size(node: Path) -> None:
    (f,) = run_check(node, "system.memory")
    assert f.status is Status.PASS and f.summary == "2015.5 GiB, 98 % available"
    (f,) = run_check(node, "system.memory", expected_gib=2048)  # 2 TiB of DIMMs, 1.6 % reserved
    assert f.status is Status.PASS and f.summary.endswith("as expected, 98 % available")
    (f,) = run_check(node, "system.memory", expected_gib=2304)  # 12.5 % short: DIMMs missing
    assert f.status is Status.FAIL and "expected 2304 GiB (±5 %)" in f.summary
    assert f.remedy and "ipmitool sel list" in f.remedy


def test_memory_little_available(node: Path) -> None:
    meminfo = node / "proc/meminfo"
    meminfo.write_text(
        meminfo.read_text().replace(
            "MemAvailable:   2071213456 kB", "MemAvailable:     42000000 kB"
        )
    )
    (f,) = run_check(node, "system.memory")
    assert f.status is Status.WARN and f.summary.startswith("only 2.0 % of memory available")


def test_memory_recorded_meminfo_and_unreadable(tmp_path: Path) -> None:
    """procfs's recorded meminfo predates MemAvailable (Linux 3.14): the size is judged, the
    available memory is unknown, never assumed."""
    root = extract_ttar(
        recording("procfs/procfs__fixtures.ttar"),
        tmp_path,
        strip="fixtures/",
        only=("proc/meminfo",),
    )
    (f,) = run_check(root, "system.memory")
    assert f.status is Status.UNKNOWN and f.evidence["total_gib"] == 14.9
    assert f.summary.startswith("MemAvailable unreadable: missing")
    assert {x.status for x in run_check(root, "system.memory", expected_gib=32)} == {
        Status.FAIL,
        Status.UNKNOWN,
    }
    (f,) = run_check(make_tree(tmp_path / "e"), "system.memory")
    assert f.status is Status.UNKNOWN
    assert f.summary == "MemTotal unreadable: not in this bundle: proc/meminfo"
    assert f.remedy is not None and f.remedy.startswith("Give dolmen proc/meminfo")  # not the BMC
    (tmp_path / "p/proc").mkdir(parents=True)  # proc/ recorded, meminfo not: missing
    (f,) = run_check(tmp_path / "p", "system.memory")
    assert f.status is Status.UNKNOWN and "MemTotal unreadable: missing" in f.summary


def test_numa_gpus_on_two_sockets(node: Path) -> None:
    by = by_subject(run_check(node, "system.numa"))
    assert by["host"].status is Status.PASS and by["host"].evidence["nodes"] == [0, 1]
    (node / GPU.format(bus="97")).write_text("-1\n")
    (node / GPU.format(bus="53")).write_text("junk\n")
    by = by_subject(run_check(node, "system.numa"))
    assert by["gpu:00000000:97:00.0"].status is Status.WARN
    assert "GPU has no NUMA node (-1) on a host with 2 nodes" in by["gpu:00000000:97:00.0"].summary
    assert by["gpu:00000000:53:00.0"].status is Status.UNKNOWN
    assert by["host"].summary.startswith("15 GPU/NIC function(s)")  # 6 GPUs, 9 HCAs


def test_numa_node_exporter_tree(tmp_path: Path) -> None:
    """Two nodes with CPUs, a CPU-less memory node, an igb NIC on node 0 and an NVMe at -1."""
    root = extract_ttar(
        recording("sysfs/node_exporter__sys.ttar"), tmp_path, only=("sys/bus/pci", "sys/devices")
    )
    (f,) = run_check(root, "system.numa")
    assert f.status is Status.PASS and f.evidence["nodes"] == [0, 1]  # the NVMe is not judged
    nic = root / "sys/devices/pci0000:40/0000:40:01.3/0000:45:00.0/numa_node"
    nic.write_text("-1\n")
    by = by_subject(run_check(root, "system.numa"))
    assert (
        by["pci:0000:45:00.0"].status is Status.WARN
        and "NIC has no NUMA node" in by["pci:0000:45:00.0"].summary
    )


def test_numa_one_node_or_none(tmp_path: Path) -> None:
    one = make_tree(tmp_path / "one", files={"sys/devices/system/node/node0/cpulist": "0-63\n"})
    (f,) = run_check(one, "system.numa")
    assert f.status is Status.SKIP and "one NUMA node" in f.summary
    flat = make_tree(tmp_path / "flat", files={"sys/devices/system/cpu/online": "0-3\n"})
    (f,) = run_check(flat, "system.numa")
    assert f.status is Status.SKIP and "kernel without NUMA" in f.summary


def test_kernel(node: Path) -> None:
    (f,) = run_check(node, "system.kernel")
    assert f.status is Status.PASS
    assert f.summary == "nvidia 580.105.08 is loaded in kernel 5.15.0-126-generic: built for it"
    (node / "sys/module/nvidia/version").unlink()
    (f,) = run_check(node, "system.kernel")
    assert f.status is Status.SKIP and "not loaded in kernel 5.15.0-126-generic" in f.summary
    (node / "proc/sys/kernel/osrelease").unlink()
    (f,) = run_check(node, "system.kernel")
    assert f.status is Status.UNKNOWN and f.summary == "running kernel unreadable: missing"
