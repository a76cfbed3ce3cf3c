"""interconnect.ib.port_state, .rate and .sources_agree on the real H100 sysfs tree, the
ibstat captures and GCM's sysfs maps (good, bad rate, stuck in INIT)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dolmen.checks.model import Status
from tests.checks.helpers import by_subject, run_check
from tests.conftest import make_tree, recording
from tests.facts.trees import extract_ttar, load_sysfs_map

H100_SYSFS = "sysfs/gpud__sys-class-infiniband-h100.0"
IBSTAT = "infiniband/gpud__ibstat."
PORT = "sys/class/infiniband/{dev}/ports/1"


@pytest.fixture
def h100(tmp_path: Path) -> Path:
    """The real /sys/class/infiniband of an H100 node (8 NDR ports, a RoCE bond), with the
    ibstat recorded on the same node."""
    shutil.copytree(recording(H100_SYSFS), tmp_path / "sys/class/infiniband")
    ibstat = recording(IBSTAT + "47.0.h100.all.active.2").read_text()
    return make_tree(tmp_path, commands={"ibstat": ibstat})


def _edit(root: Path, dev: str, **files: str) -> None:
    for name, text in files.items():
        (root / PORT.format(dev=dev) / name).write_text(text + "\n")


def test_port_state_all_active(h100: Path) -> None:
    findings = run_check(h100, "interconnect.ib.port_state")
    assert len(findings) == 8  # the Ethernet bond is interconnect.roce's
    assert all(f.status is Status.PASS for f in findings)
    assert findings[0].subject == "ib:mlx5_0/1"
    assert findings[0].summary == "ACTIVE, LinkUp, 400 Gb/sec (4X NDR)"


@pytest.mark.parametrize(
    ("state", "phys", "hint"),
    [
        ("1: DOWN", "2: Polling", "mlxlink -d mlx5_5 -p 1"),
        ("1: DOWN", "3: Disabled", "ignore_ports"),
        ("2: INIT", "5: LinkUp", "subnet manager"),
        ("3: ARMED", "5: LinkUp", "SM's log"),
    ],
)
def test_port_state_not_active_fails(h100: Path, state: str, phys: str, hint: str) -> None:
    _edit(h100, "mlx5_5", state=state, phys_state=phys)
    by = by_subject(run_check(h100, "interconnect.ib.port_state"))
    f = by["ib:mlx5_5/1"]
    assert f.status is Status.FAIL and f.remedy and hint in f.remedy
    assert f.evidence["state"] == state.split(": ")[1] and f.evidence["source"] == "sysfs"
    assert sum(x.status is Status.PASS for x in by.values()) == 7


def test_port_state_ignore_ports_and_unreadable(h100: Path) -> None:
    _edit(h100, "mlx5_5", state="1: DOWN", phys_state="3: Disabled")
    _edit(h100, "mlx5_6", state="\x00\xff")
    by = by_subject(run_check(h100, "interconnect.ib.port_state", ignore_ports=["mlx5_5/1"]))
    assert by["ib:mlx5_5/1"].status is Status.SKIP
    assert by["ib:mlx5_6/1"].status is Status.UNKNOWN
    assert "malformed" in by["ib:mlx5_6/1"].summary


def test_port_state_gcm_stuck_in_init(tmp_path: Path) -> None:
    root = load_sysfs_map(recording("sysfs/gcm__learn_stuck_ib_intf.json"), tmp_path)
    findings = run_check(root, "interconnect.ib.port_state")
    failed = [f for f in findings if f.status is Status.FAIL]
    assert len(findings) == 8 and len(failed) >= 2
    assert all(f.summary.startswith("port is INIT") for f in failed)


def test_port_state_from_ibstat_alone(tmp_path: Path) -> None:
    """ibpanic: ibstat died on mlx5_8 after printing eight active HDR ports: the HCA
    vanished, and the node is not healthy (it was all-pass)."""
    text = recording(IBSTAT + "39.0.a100.failed.ibpanic.exit-255.0").read_text()
    err = next(line for line in text.splitlines() if line.startswith("ibpanic"))
    root = make_tree(tmp_path, commands={"ibstat": (text, 255, err)})
    by = by_subject(run_check(root, "interconnect.ib.port_state"))
    lost = by.pop("ib:mlx5_8")
    assert lost.status is Status.FAIL and "IB device mlx5_8 vanished" in lost.summary
    assert "stat of IB device 'mlx5_8' failed" in lost.summary
    assert lost.remedy and "dmesg" in lost.remedy
    assert len(by) == 8 and all(f.status is Status.PASS for f in by.values())
    assert by["ib:mlx5_0/1"].evidence["source"] == "ibstat"
    # A failure that names no device leaves what ibstat did not print unknown.
    root = make_tree(tmp_path / "b", commands={"ibstat": (text[:800], 255, "ibwarn: timeout")})
    by = by_subject(run_check(root, "interconnect.ib.port_state"))
    assert by["host"].status is Status.UNKNOWN and "ibwarn: timeout" in by["host"].summary
    (agree,) = run_check(root, "interconnect.ib.sources_agree")
    assert agree.status is Status.SKIP


def test_port_state_ethernet_only_host_skips(tmp_path: Path) -> None:
    text = recording(IBSTAT + "47.0.h100.some.down.with.polling.1").read_text()
    root = make_tree(tmp_path, commands={"ibstat": text})
    (f,) = run_check(root, "interconnect.ib.port_state")
    assert f.status is Status.SKIP and "interconnect.roce" in f.summary


def test_no_hca_is_skipped_by_the_framework(tmp_path: Path) -> None:
    """An empty bundle says nothing about the host; one that recorded sys/ and the tools
    vouches for their absence."""
    (f,) = run_check(make_tree(tmp_path / "empty"), "interconnect.ib.port_state")
    assert f.status is Status.SKIP
    assert f.summary == "not in this bundle: sys/class/infiniband, ibstat, ibstatus, ibv_devinfo"
    root = make_tree(
        tmp_path / "full", files={"sys/class/net/lo/mtu": "65536\n"}, commands={"lspci": ""}
    )
    (f,) = run_check(root, "interconnect.ib.port_state")
    assert f.status is Status.SKIP and f.summary.startswith("no InfiniBand/RoCE ports on this host")
    assert "missing: sys/class/infiniband" in f.summary


def test_rate_against_peers(h100: Path) -> None:
    by = by_subject(run_check(h100, "interconnect.ib.rate"))
    assert by["ib:mlx5_0/1"].status is Status.PASS
    assert by["ib:mlx5_bond_0/1"].status is Status.SKIP  # the only BlueField-3 port
    _edit(h100, "mlx5_4", rate="200 Gb/sec (2X NDR)")
    _edit(h100, "mlx5_6", state="1: DOWN", phys_state="2: Polling", rate="10 Gb/sec (4X SDR)")
    by = by_subject(run_check(h100, "interconnect.ib.rate"))
    f = by["ib:mlx5_4/1"]
    assert f.status is Status.FAIL and f.evidence["expected_gbps"] == 400.0
    assert "below 400 Gb/s" in f.summary
    assert by["ib:mlx5_6/1"].status is Status.SKIP  # down: port_state's finding


def test_rate_gcm_bad_rate_map(tmp_path: Path) -> None:
    """GCM's bad-rate node: every port at 100 Gb/s (4X EDR) under an ib netdev at 200000
    Mb/s. The peers agree with each other; the netdevs do not (GCM: degraded, critical)."""
    root = load_sysfs_map(recording("sysfs/gcm__learn_ib_intf_bad_rate.json"), tmp_path)
    findings = run_check(root, "interconnect.ib.rate")
    assert len(findings) == 8 and all(f.status is Status.FAIL for f in findings)
    f = by_subject(findings)["ib:mlx5_8/1"]
    assert f.summary == "100 Gb/sec (4X EDR), below 200 Gb/s (its netdev ib6's speed)"
    findings = run_check(root, "interconnect.ib.rate", expected_gbps=200)
    assert len(findings) == 8 and all(f.status is Status.FAIL for f in findings)
    assert all(f.evidence["rate_gbps"] == 100.0 for f in findings)
    good = load_sysfs_map(recording("sysfs/gcm__learn_good.json"), tmp_path / "good")
    findings = run_check(good, "interconnect.ib.rate", expected_gbps=200)
    assert len(findings) == 8 and all(f.status is Status.PASS for f in findings)


def test_rate_below_the_hca_capability_warns(tmp_path: Path) -> None:
    """Eight HDR-capable ports (Azure's ConnectX-6 VFs) all at 100 Gb/s: the siblings agree,
    so only the capability says something, and it is a ceiling: a warning naming the site
    setting that decides (it passed before, "the fastest port of that HCA")."""
    text = recording(IBSTAT + "39.0.a100.failed.ibpanic.exit-255.0").read_text()
    root = make_tree(tmp_path, commands={"ibstat": text.replace("Rate: 200", "Rate: 100")})
    findings = run_check(root, "interconnect.ib.rate")
    assert len(findings) == 8 and all(f.status is Status.WARN for f in findings)
    f = findings[0]
    assert "below the 200 Gb/s a ConnectX-6 Virtual Function port reaches" in f.summary
    assert f.remedy and "expected_ib_rate" in f.remedy and f.evidence["capability_gbps"] == 200
    assert all(
        f.status is Status.FAIL for f in run_check(root, "interconnect.ib.rate", expected_gbps=200)
    )
    assert all(
        f.status is Status.PASS for f in run_check(root, "interconnect.ib.rate", expected_gbps=100)
    )


def test_port_state_malformed_phys_state_is_unknown_not_a_cable(tmp_path: Path) -> None:
    """procfs' fixture writes "4: ACTIVE" into mlx5_0's phys_state: it failed as
    "ACTIVE/ACTIVE" with a reseat-the-cable remedy."""
    pf = extract_ttar(
        recording("procfs/procfs__fixtures.ttar"),
        tmp_path / "pf",
        strip="fixtures/",
        only=("sys/class/infiniband",),
    )
    by = by_subject(run_check(pf, "interconnect.ib.port_state"))
    f = by["ib:mlx5_0/1"]
    assert f.status is Status.UNKNOWN
    assert f.summary == "ACTIVE, physical state unreadable: malformed: '4: ACTIVE'"
    assert by["ib:mlx4_0/1"].status is Status.PASS
    _edit(pf, "mlx5_0", state="1: DOWN")
    f = by_subject(run_check(pf, "interconnect.ib.port_state"))["ib:mlx5_0/1"]
    assert f.status is Status.FAIL and f.remedy and "reseat" not in f.remedy


def test_rate_site_expectation(tmp_path: Path) -> None:
    """NHC's check_hw_ib 400 on an HDR (200 Gb/s) node: every port fails."""
    text = recording(IBSTAT + "47.0.a100.all.active.0").read_text()
    root = make_tree(tmp_path, commands={"ibstat": text})
    by = by_subject(run_check(root, "interconnect.ib.rate", expected_gbps=400))
    assert by["ib:mlx5_1/1"].status is Status.FAIL
    assert "the site's expected rate" in by["ib:mlx5_1/1"].summary
    # mlx5_0 is the node's only Ethernet port: the site's IB rate does not apply to it.
    assert by["ib:mlx5_0/1"].status is Status.SKIP


def test_rate_unreadable_is_unknown(h100: Path) -> None:
    _edit(h100, "mlx5_7", rate="unknown")
    f = by_subject(run_check(h100, "interconnect.ib.rate"))["ib:mlx5_7/1"]
    assert f.status is Status.UNKNOWN and "malformed" in f.summary


def test_sources_agree(h100: Path) -> None:
    (f,) = run_check(h100, "interconnect.ib.sources_agree")
    assert f.status is Status.PASS and f.summary == "sysfs and ibstat agree on 9 port(s)"


def test_sources_disagree_per_port(h100: Path) -> None:
    down = recording(IBSTAT + "47.0.h100.some.down.0").read_text()
    make_tree(h100, commands={"ibstat": down})
    by = by_subject(run_check(h100, "interconnect.ib.sources_agree"))
    assert all(f.status is Status.WARN for f in by.values())
    assert by["ib:mlx5_7/1"].summary.startswith("state is ACTIVE in sysfs, DOWN in ibstat; ")
    assert "link_layer is InfiniBand in sysfs, Ethernet in ibstat" in by["ib:mlx5_7/1"].summary
    assert by["ib:mlx5_10/1"].summary == "in ibstat, not in sysfs"
    assert by["ib:mlx5_bond_0/1"].summary == "in sysfs, not in ibstat"


def test_sources_ibpanic_and_missing_and_failed(h100: Path) -> None:
    text = recording(IBSTAT + "39.0.a100.failed.ibpanic.exit-255.0").read_text()
    make_tree(h100, commands={"ibstat": (text, 255, "ibpanic: stat of IB device failed")})
    by = by_subject(run_check(h100, "interconnect.ib.sources_agree"))
    assert by["host"].status is Status.WARN and "ibstat failed part-way" in by["host"].summary
    (h100 / "commands/ibstat").unlink()
    (h100 / "commands/ibstat.rc").unlink()
    (h100 / "commands/ibstat.err").unlink()
    (f,) = run_check(h100, "interconnect.ib.sources_agree")
    assert f.status is Status.SKIP and "not installed" in f.summary
    make_tree(h100, commands={"ibstat": ("", 1, "ibwarn: umad_init failed")})
    (f,) = run_check(h100, "interconnect.ib.sources_agree")
    assert f.status is Status.UNKNOWN and "command failed" in f.summary


def test_only_a_vanished_device(tmp_path: Path) -> None:
    """ibstat died on its first device: no port, but an HCA the checks must not skip."""
    panic = "ibpanic: [7] main: stat of IB device 'mlx5_0' failed: No such file or directory\n"
    root = make_tree(tmp_path, commands={"ibstat": ("", 255, panic)})
    (f,) = run_check(root, "interconnect.ib.port_state")
    assert f.status is Status.FAIL and f.subject == "ib:mlx5_0"
    for check in ("interconnect.ib.rate", "interconnect.ib.errors", "interconnect.roce"):
        (f,) = run_check(root, check)
        assert f.status is Status.SKIP, check
