"""The interconnect, storage and system checks on the committed scenarios: nothing to report
on the healthy H100 node, and h100-ib-port-down's [expect] holds."""

from __future__ import annotations

from pathlib import Path

from dolmen.checks.model import Level, Status
from dolmen.checks.suite import validate
from dolmen.checks.verdict import Health
from dolmen.host.tree import TreeHost
from tests.hosts import scenarios

MINE = ("interconnect", "storage", "system")


def _build(name: str, dest: Path) -> Path:
    return scenarios.build(name, dest)


def test_healthy_node_passes_or_skips(tmp_path: Path) -> None:
    tree = _build("h100-hgx-healthy", tmp_path / "healthy")
    verdict = validate(TreeHost(tree), level=Level.FULL, only=MINE)
    bad = [
        (f.check, f.subject, f.summary)
        for f in verdict.findings
        if f.status not in (Status.PASS, Status.SKIP)
    ]
    assert not bad
    assert verdict.health is Health.HEALTHY
    checked = {f.check for f in verdict.findings if f.status is Status.PASS}
    assert {
        "interconnect.nvlink.state",
        "interconnect.ib.port_state",
        "storage.free_space",
    } <= checked


def test_ib_port_down_scenario_meets_its_expectations(tmp_path: Path) -> None:
    spec = scenarios.spec("h100-ib-port-down")
    tree = _build("h100-ib-port-down", tmp_path / "down")
    verdict = validate(TreeHost(tree), level=Level.QUICK)
    assert verdict.health.value == spec["expect"]["status"] == "unhealthy"
    by_status: dict[Status, set[str]] = {}
    for f in verdict.findings:
        by_status.setdefault(f.status, set()).add(f.check)
    assert set(spec["expect"]["fail"]) <= by_status[Status.FAIL]
    assert set(spec["expect"]["warn"]) <= by_status[Status.WARN]
    down = {
        f.subject
        for f in verdict.findings
        if f.check == "interconnect.ib.port_state" and f.status is Status.FAIL
    }
    assert down == {"ib:mlx5_7/1", "ib:mlx5_8/1"}
    problems = [p.check for p in verdict.problems() if p.status is Status.FAIL]
    assert "interconnect.ib.port_state" in problems


def test_hcas_off_the_pci_bus_are_unknown_never_passed(tmp_path: Path) -> None:
    """The real sys/class/infiniband of an H100 node (9 mlx5 HCAs) in a tree whose PCI bus
    lacks their functions: their PCIe links are unknown, never "no Mellanox NIC" passed."""
    tree = _build("h100-hgx-healthy", tmp_path / "t")
    devices = tree / "sys/bus/pci/devices"
    for link in devices.iterdir():
        if (link / "vendor").read_text().strip() == "0x15b3":
            link.unlink()
    verdict = validate(TreeHost(tree), level=Level.QUICK, only=("interconnect.nic.pcie_limited",))
    [f] = verdict.findings
    assert f.status is Status.UNKNOWN, f.summary
    assert "sys/class/infiniband shows (mlx5_0, mlx5_1, mlx5_4" in f.summary
    assert "not in this bundle: their PCI functions" in f.summary
    assert f.remedy is not None and f.remedy.startswith("Give dolmen their PCI functions")


def test_aer_of_hcas_off_the_pci_bus_is_unknown_never_passed(tmp_path: Path) -> None:
    """The same tree: with no non-GPU device's AER counters read, the HCAs that
    sys/class/infiniband shows make system.pcie.aer unknown, never "no AER counters"."""
    tree = _build("h100-hgx-healthy", tmp_path / "t")
    devices = tree / "sys/bus/pci/devices"
    for link in devices.iterdir():
        if (link / "vendor").read_text().strip() == "0x15b3":
            link.unlink()
    verdict = validate(TreeHost(tree), level=Level.QUICK, only=("system.pcie.aer",))
    [f] = verdict.findings
    assert f.status is Status.UNKNOWN, f.summary
    assert "the AER counters of the Mellanox HCAs sys/class/infiniband shows" in f.summary
