"""system.pcie.downgraded and system.pcie.aer on node_exporter's recorded PCI tree (a Gen4
NVMe behind a Gen3 root port, an igb NIC), a real H100 HGX lspci -vvv, and kernel AER lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.checks.model import Status
from dolmen.checks.system.pcie_links import owned
from dolmen.facts.pci import PciDevice, PciLink, make_link
from tests.checks.helpers import by_subject, run_check
from tests.conftest import make_tree, recording
from tests.facts.trees import extract_ttar

NVME = "sys/devices/pci0000:00/0000:00:02.1/0000:01:00.0"
DAY = 86400


@pytest.fixture
def ne(tmp_path: Path) -> Path:
    return extract_ttar(
        recording("sysfs/node_exporter__sys.ttar"), tmp_path, only=("sys/bus/pci", "sys/devices")
    )


def _aer_line(kind: str, sub: str) -> str:
    """A pcieport AER line as the kernel prints it (drivers/pci/pcie/aer.c, 5.x)."""
    return (
        f"kern  :err   : 2025-01-20T09:0{sub}+00:00 pcieport 0000:00:02.1: AER: {kind} error "
        "received: 0000:01:00.0\n"
    )


def test_downgraded_gen4_drive_behind_gen3_port_is_fine(ne: Path) -> None:
    """The drive can do Gen4 x4 and runs Gen3 x4: its root port's maximum is Gen3."""
    (f,) = run_check(ne, "system.pcie.downgraded")
    assert f.status is Status.PASS and f.evidence["devices"] == ["0000:01:00.0", "0000:45:00.0"]


@pytest.mark.parametrize(
    ("attr", "value", "lack"),
    [
        ("current_link_width", "2", "x2 < x4"),
        ("current_link_speed", "5.0 GT/s PCIe", "5 GT/s < 8 GT/s"),
    ],
)
def test_downgraded_below_both_ends(ne: Path, attr: str, value: str, lack: str) -> None:
    (ne / NVME / attr).write_text(value + "\n")
    f = by_subject(run_check(ne, "system.pcie.downgraded"))["pci:0000:01:00.0"]
    assert f.status is Status.WARN and f.summary == f"link below what both ends allow: {lack}"
    assert f.evidence["target"] == "Gen3 x4 (8 GT/s)"


def test_downgraded_unreadable_link(ne: Path) -> None:
    (ne / NVME / "current_link_speed").write_text("Unknown\n")
    (ne / NVME / "current_link_width").write_text("junk\n")
    f = by_subject(run_check(ne, "system.pcie.downgraded"))["pci:0000:01:00.0"]
    assert f.status is Status.UNKNOWN and "current link unreadable" in f.summary


def test_downgraded_from_lspci_alone(tmp_path: Path) -> None:
    """The real HGX lspci: its bridges' bus numbers give every device's upstream port, so
    the two links below their device's own maximum (an onboard 1 GbE NIC wired x1, a
    baseboard device at x2) are judged against their ports (x1, x2): at what both ends
    allow, as every other non-GPU link there."""
    lspci = recording("lspci/gpud__lspci-vvv").read_text()
    f = run_check(make_tree(tmp_path, commands={"lspci -vvv": lspci}), "system.pcie.downgraded")
    assert [x.status for x in f] == [Status.PASS]
    assert f[0].summary.startswith("31 non-GPU link(s)")
    judged = set(f[0].evidence["devices"])
    assert "0000:01:00.0" in judged and "0000:81:00.0" in judged  # 81:00.1 shares its link


def test_downgraded_without_the_bus(tmp_path: Path) -> None:
    """An ibstat alone: the bus is not in the bundle, so whether it has a non-GPU link to
    judge is not known (not "no non-GPU PCIe link")."""
    ibstat = recording("infiniband/gpud__ibstat.47.0.h100.all.active.0").read_text()
    (f,) = run_check(make_tree(tmp_path, commands={"ibstat": ibstat}), "system.pcie.downgraded")
    assert f.status is Status.SKIP
    assert f.summary.startswith("the PCI devices: not in this bundle: sys/bus/pci")


def _dev(bdf: str, vendor: str, cls: str, parent: str | None = None) -> PciDevice:
    link = make_link(32.0, 16)
    return PciDevice(bdf, vendor, "0000", cls, parent=parent, current_link=link, max_link=link)


def test_owned_links_one_per_link() -> None:
    """Root port -> switch upstream port -> downstream ports -> GPU, NVMe; a GPU's audio
    function shares the GPU's link; the NVSwitch and the NVMe are judged, and the switch's
    upstream port (its link to the root port), but not the downstream ports."""
    devs = [
        _dev("0000:00:01.0", "8086", "0604"),  # root port, depth 0
        _dev("0000:01:00.0", "1000", "0604", "0000:00:01.0"),  # switch upstream port, depth 1
        _dev("0000:02:00.0", "1000", "0604", "0000:01:00.0"),  # downstream port to the GPU
        _dev("0000:02:01.0", "1000", "0604", "0000:01:00.0"),  # downstream port to the NVMe
        _dev("0000:03:00.0", "10de", "0302", "0000:02:00.0"),  # H100
        _dev("0000:03:00.1", "10de", "0403", "0000:02:00.0"),  # its audio function
        _dev("0000:04:00.0", "144d", "0108", "0000:02:01.0"),  # NVMe
        _dev("0000:05:00.0", "10de", "0680"),  # NVSwitch
        _dev("0000:06:00.0", "15b3", "0207"),  # ConnectX-7: interconnect.nic.pcie_limited
        PciDevice("0000:07:00.0", current_link=PciLink(2.5, 1), max_link=PciLink(32.0, 16)),
    ]
    mine = {d.bdf for d in owned({d.bdf: d for d in devs})}
    assert mine == {"0000:01:00.0", "0000:04:00.0", "0000:05:00.0"}
    gpu_only = [
        d for d in devs if d.bdf in ("0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0")
    ]
    assert owned({d.bdf: d for d in gpu_only}) == []  # a switch serving GPUs only is gpu.*'s


def test_aer_clean_tree(ne: Path) -> None:
    clean = recording("kernel-logs/azurehpc__0flap_syslog").read_text()
    make_tree(ne, commands={"dmesg": clean})
    (f,) = run_check(ne, "system.pcie.aer")
    assert (
        f.status is Status.PASS and f.summary == "2 non-GPU device(s) without AER errors since boot"
    )


def test_aer_log_alone_is_not_a_pass(tmp_path: Path) -> None:
    """A bundle with the log and no PCI tree: a clean log says nothing of the counters."""
    clean = recording("kernel-logs/azurehpc__0flap_syslog").read_text()
    partial = {"dolmen-snapshot.json": '{"partial": true}'}
    root = make_tree(tmp_path, files=partial, commands={"dmesg": clean})
    (f,) = run_check(root, "system.pcie.aer")
    assert f.status is Status.UNKNOWN and "not in this bundle: sys/bus/pci" in f.summary


def test_aer_uncorrectable_counter_fails(ne: Path) -> None:
    path = ne / NVME / "aer_dev_nonfatal"
    text = path.read_text().replace("UnsupReq 0", "UnsupReq 3").replace("NONFATAL 0", "NONFATAL 3")
    path.write_text(text)
    by = by_subject(run_check(ne, "system.pcie.aer"))
    f = by["pci:0000:01:00.0"]
    assert (
        f.status is Status.FAIL
        and f.summary == "3 uncorrectable AER error(s) since boot (UnsupReq 3)"
    )
    hosts = {x.status for x in run_check(ne, "system.pcie.aer") if x.subject == "host"}
    assert hosts == {Status.PASS, Status.UNKNOWN}  # the igb NIC is clean; no kernel log here


def test_aer_correctable_rate(ne: Path) -> None:
    path = ne / NVME / "aer_dev_correctable"
    path.write_text(path.read_text().replace("RxErr 0", "RxErr 1000").replace("COR 0", "COR 1000"))
    make_tree(ne, files={"proc/uptime": "3600.00 7200.00\n"})
    f = by_subject(run_check(ne, "system.pcie.aer"))["pci:0000:01:00.0"]
    assert (
        f.status is Status.WARN
        and "1000 correctable AER error(s) over 1.0 h: RxErr 1000" in f.summary
    )
    make_tree(ne, files={"proc/uptime": f"{30 * DAY}.00 0.00\n"})
    assert "pci:0000:01:00.0" not in by_subject(run_check(ne, "system.pcie.aer"))


def test_aer_kernel_log_lines(ne: Path) -> None:
    lines = _aer_line("Uncorrected (Non-Fatal)", "5:01,000001") + "".join(
        _aer_line("Corrected", f"6:{s:02d},000001") for s in range(10)
    )
    make_tree(ne, commands={"dmesg": lines})
    by = by_subject(run_check(ne, "system.pcie.aer"))
    findings = [f for f in run_check(ne, "system.pcie.aer") if f.subject == "pci:0000:01:00.0"]
    assert {f.status for f in findings} == {Status.FAIL, Status.WARN}
    fail = next(f for f in findings if f.status is Status.FAIL)
    assert "1 uncorrectable AER line(s) in the kernel log (nvme)" in fail.summary
    warn = next(f for f in findings if f.status is Status.WARN)
    assert warn.summary == "10 correctable AER lines within one minute in the kernel log"
    assert by["host"].status is Status.PASS


def test_aer_gpu_lines_belong_to_gpu_checks(tmp_path: Path) -> None:
    from tests.hosts import scenarios

    node = scenarios.build("h100-hgx-healthy", tmp_path / "node")
    line = (
        "kern  :err   : 2026-10-24T09:20:00,000001+00:00 pcieport 0000:52:00.0: AER: Uncorrected "
        "(Fatal) error received: 0000:53:00.0\n"
    )
    dmesg = node / "commands/dmesg"
    dmesg.write_text(dmesg.read_text() + line)
    (f,) = run_check(node, "system.pcie.aer")
    assert f.status is Status.PASS
