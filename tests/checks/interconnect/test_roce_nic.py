"""interconnect.roce, interconnect.nic.link and interconnect.nic.pcie_limited on the real
ibstat captures, GCM's sysfs maps (good, interface set down, stuck without carrier), a real
H100 HGX lspci -vvv and a real boot log."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from dolmen.checks.model import Status
from tests.checks.helpers import by_subject, run_check
from tests.conftest import make_tree, recording
from tests.facts.trees import load_sysfs_map

DAY = 86400
NET = "sys/bus/pci/devices/{bdf}/net/{name}/{attr}"
# The kernel's pcie_print_link_status() line, for a ConnectX-7 in a Gen3 x8 slot.
LIMITED = (
    "kern  :info  : 2025-01-17T15:36:26,128339+00:00 mlx5_core 0000:1a:00.0: 63.008 Gb/s "
    "available PCIe bandwidth, limited by 8.0 GT/s PCIe x8 link at 0000:17:01.0 (capable of "
    "504.112 Gb/s with 32.0 GT/s PCIe x16 link)\n"
)


def _gcm(name: str, root: Path, uptime: float | None = DAY) -> Path:
    load_sysfs_map(recording(f"sysfs/gcm__learn_{name}.json"), root)
    if uptime is not None:
        make_tree(root, files={"proc/uptime": f"{uptime} {uptime}\n"})
    return root


def test_roce_bond_of_the_h100_tree(tmp_path: Path) -> None:
    shutil.copytree(
        recording("sysfs/gpud__sys-class-infiniband-h100.0"), tmp_path / "sys/class/infiniband"
    )
    (f,) = run_check(tmp_path, "interconnect.roce")
    assert f.status is Status.PASS and f.subject == "ib:mlx5_bond_0/1"
    assert f.evidence["gid_table"] == "not in the facts"


def test_roce_ports_from_ibstat_polling_and_disabled(tmp_path: Path) -> None:
    text = recording("infiniband/gpud__ibstat.47.0.h100.some.down.with.polling.1").read_text()
    by = by_subject(run_check(make_tree(tmp_path, commands={"ibstat": text}), "interconnect.roce"))
    assert len(by) == 12
    assert by["ib:mlx5_11/1"].status is Status.FAIL
    assert "without carrier" in by["ib:mlx5_11/1"].summary
    remedy = by["ib:mlx5_11/1"].remedy
    assert remedy and "mlxlink -d mlx5_11 -p 1" in remedy
    # 2 of 8 identical ConnectX-7 rails down while six are ACTIVE: GPUd calls the node
    # unhealthy; the one set down is a missing rail, not a port "not in use".
    f = by["ib:mlx5_5/1"]
    assert f.status is Status.FAIL and "a missing rail" in f.summary
    assert "6 of its 7 MT4129 Ethernet (RoCE) siblings are ACTIVE" in f.summary
    assert sum(f.status is Status.PASS for f in by.values()) == 10


def test_roce_model_mostly_down_is_not_in_use(tmp_path: Path) -> None:
    """gpud's other H100 node: three of four ConnectX-6 Dx ports set down, one active."""
    text = recording("infiniband/gpud__ibstat.47.0.h100.some.down.0").read_text()
    by = by_subject(run_check(make_tree(tmp_path, commands={"ibstat": text}), "interconnect.roce"))
    assert {s for s, f in by.items() if f.status is Status.SKIP} == {
        "ib:mlx5_2/1",
        "ib:mlx5_7/1",
        "ib:mlx5_8/1",
    }
    assert by["ib:mlx5_1/1"].status is Status.PASS


def test_roce_names_the_netdev_and_ignores_ports(tmp_path: Path) -> None:
    """GCM's good node with mlx5_0 turned into a RoCE port without carrier."""
    root = _gcm("good", tmp_path)
    port = root / "sys/bus/pci/devices/0000:0c:00.0/infiniband/mlx5_0/ports/1"
    (port / "link_layer").write_text("Ethernet\n")
    (port / "state").write_text("1: DOWN\n")
    (port / "phys_state").write_text("2: Polling\n")
    (f,) = run_check(root, "interconnect.roce")
    assert f.status is Status.FAIL and f.evidence["netdev"] == "ib0"
    assert f.summary == "ib0 is up without carrier (port DOWN/Polling)"
    (f,) = run_check(root, "interconnect.roce", ignore_ports=["mlx5_0"])
    assert f.status is Status.SKIP


def test_roce_none_and_unreadable(tmp_path: Path) -> None:
    text = recording("infiniband/gpud__ibstat.47.0.h100.all.active.2").read_text()
    by = by_subject(run_check(make_tree(tmp_path, commands={"ibstat": text}), "interconnect.roce"))
    assert by["ib:mlx5_bond_0/1"].status is Status.PASS
    root = _gcm("good", tmp_path / "gcm")
    (f,) = run_check(root, "interconnect.roce")
    assert f.status is Status.SKIP and "no RoCE" in f.summary
    port = root / "sys/bus/pci/devices/0000:0c:00.0/infiniband/mlx5_0/ports/1"
    (port / "link_layer").write_text("Ethernet\n")
    (port / "state").write_text("up?\n")
    (f,) = run_check(root, "interconnect.roce")
    assert f.status is Status.UNKNOWN and "malformed" in f.summary


def test_nic_link_gcm_good(tmp_path: Path) -> None:
    findings = run_check(_gcm("good", tmp_path), "interconnect.nic.link")
    assert len(findings) == 8 and all(f.status is Status.PASS for f in findings)
    f = by_subject(findings)["nic:ib0"]
    assert f.summary == "link up at 200 Gb/s, 1 loss(es) since the driver loaded"
    assert f.evidence["carrier_down_count"] == 1


def test_nic_link_ipoib_down_under_an_active_port_fails(tmp_path: Path) -> None:
    """GCM's operstate-down node: ib4 set down after 49 carrier losses while mlx5_6 is
    ACTIVE (GCM: LINK_OPERSTATE_DOWN, critical)."""
    by = by_subject(run_check(_gcm("ib_intf_operstate_down", tmp_path), "interconnect.nic.link"))
    f = by["nic:ib4"]
    assert f.status is Status.FAIL and f.evidence["ib_port"] == "ib:mlx5_6/1"
    assert f.summary == "IPoIB interface set down after 49 carrier losses while its port " + (
        "ib:mlx5_6/1 is ACTIVE"
    )
    assert f.remedy and "ip link set ib4 up" in f.remedy
    assert by["nic:ib0"].status is Status.PASS


def test_nic_link_set_down_is_not_in_use(tmp_path: Path) -> None:
    root = _gcm("ib_intf_operstate_down", tmp_path)
    state = root / "sys/bus/pci/devices/0000:8d:00.0/infiniband/mlx5_6/ports/1/state"
    state.write_text("1: DOWN\n")  # the port is down too: nothing uses the interface
    by = by_subject(run_check(root, "interconnect.nic.link"))
    assert by["nic:ib4"].status is Status.SKIP and by["nic:ib4"].summary == "set down: not in use"


def test_nic_link_up_without_carrier_fails(tmp_path: Path) -> None:
    by = by_subject(run_check(_gcm("stuck_ib_intf", tmp_path), "interconnect.nic.link"))
    assert {s for s, f in by.items() if f.status is Status.FAIL} == {"nic:ib4", "nic:ib6"}
    assert by["nic:ib4"].summary == "set up but no carrier (operstate down)"


def test_nic_link_flaps(tmp_path: Path) -> None:
    root = _gcm("good", tmp_path, uptime=2 * 3600)
    (root / NET.format(bdf="0000:12:00.0", name="ib1", attr="carrier_down_count")).write_text("4\n")
    by = by_subject(run_check(root, "interconnect.nic.link"))
    assert by["nic:ib1"].status is Status.FAIL
    assert "at least 3 within 3 hours" in by["nic:ib1"].summary
    assert by["nic:ib0"].status is Status.PASS
    (root / "proc/uptime").unlink()
    by = by_subject(run_check(root, "interconnect.nic.link"))
    f = by["nic:ib1"]
    assert f.status is Status.UNKNOWN and "uptime unknown" in f.summary  # no rate: no warning


def test_nic_link_unreadable_and_absent(tmp_path: Path) -> None:
    root = _gcm("good", tmp_path)
    (root / NET.format(bdf="0000:0c:00.0", name="ib0", attr="carrier")).write_text("maybe\n")
    f = by_subject(run_check(root, "interconnect.nic.link"))["nic:ib0"]
    assert f.status is Status.UNKNOWN and "malformed" in f.summary
    (f,) = run_check(make_tree(tmp_path / "empty"), "interconnect.nic.link")
    assert f.status is Status.SKIP and f.summary == "not in this bundle: sys/class/net"
    (f,) = run_check(make_tree(tmp_path / "sys", files={"sys/x": "1"}), "interconnect.nic.link")
    assert f.status is Status.SKIP and "no network interfaces" in f.summary


@pytest.fixture
def hgx_lspci(tmp_path: Path) -> Path:
    """A real 8x H100 HGX node known from lspci -vvv alone, and a real boot log."""
    lspci = recording("lspci/gpud__lspci-vvv").read_text()
    boot = recording("kernel-logs/gpud__dmesg.decode.iso.log.1").read_text()
    return make_tree(tmp_path, commands={"lspci -vvv": lspci, "dmesg": boot})


def test_pcie_limited_real_hgx_is_clean(hgx_lspci: Path) -> None:
    findings = run_check(hgx_lspci, "interconnect.nic.pcie_limited")
    assert len(findings) == 10 and all(f.status is Status.PASS for f in findings)
    f = by_subject(findings)["pci:0000:1a:00.0"]
    assert (
        f.evidence["current"] == "Gen5 x16 (32 GT/s)" and "ConnectX-7" in f.evidence["description"]
    )


def test_pcie_limited_link_trained_down(hgx_lspci: Path) -> None:
    path = hgx_lspci / "commands/lspci%20-vvv"
    text = path.read_text()
    start = text.index("1a:00.0 Ethernet controller")
    head, tail = text[:start], text[start:]
    tail = tail.replace(
        "LnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)",
        "LnkSta:\tSpeed 16GT/s (downgraded), Width x8 (downgraded)",
        1,
    )
    path.write_text(head + tail)
    f = by_subject(run_check(hgx_lspci, "interconnect.nic.pcie_limited"))["pci:0000:1a:00.0"]
    assert f.status is Status.FAIL
    assert f.summary == "NIC link below its capability: 16 GT/s < 32 GT/s, x8 < x16"


def test_pcie_limited_kernel_message(hgx_lspci: Path) -> None:
    boot = (hgx_lspci / "commands/dmesg").read_text()
    lines = boot.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "0000:1a:00.0: firmware version" in line)
    make_tree(hgx_lspci, commands={"dmesg": "".join([*lines[: at + 1], LIMITED, *lines[at + 1 :]])})
    f = by_subject(run_check(hgx_lspci, "interconnect.nic.pcie_limited"))["pci:0000:1a:00.0"]
    assert f.status is Status.FAIL and "limited by 8.0 GT/s PCIe x8 link" in f.summary
    assert re.search(r"mlx5_core 0000:1a:00.0: 63.008 Gb/s", f.evidence["line"])


def test_pcie_limited_unreadable_log_and_no_nic(tmp_path: Path) -> None:
    (f,) = run_check(make_tree(tmp_path), "interconnect.nic.pcie_limited")
    assert f.status is Status.UNKNOWN and "kernel log unreadable" in f.summary
    clean = recording("kernel-logs/azurehpc__0flap_syslog").read_text()
    (f,) = run_check(
        make_tree(tmp_path / "b", commands={"dmesg": clean}), "interconnect.nic.pcie_limited"
    )
    # A log alone: the bus was not read, so "no NIC on it" is not known either.
    assert (
        f.status is Status.SKIP and "the PCI devices: not in this bundle: sys/bus/pci" in f.summary
    )
    nvme = {"sys/bus/pci/devices/0000:01:00.0/uevent": "PCI_ID=144D:A80A\nPCI_CLASS=10802\n"}
    root = make_tree(tmp_path / "c", files=nvme, commands={"dmesg": clean})
    (f,) = run_check(root, "interconnect.nic.pcie_limited")
    assert f.status is Status.PASS and "no Mellanox NIC" in f.summary
