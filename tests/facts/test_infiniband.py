"""InfiniBand facts: sysfs trees (gpud H100, procfs, node_exporter, GCM), ibstat, cross-check."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from dolmen.facts import infiniband as ib
from dolmen.facts import to_jsonable
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording, recordings_in
from tests.facts.trees import extract_ttar, load_sysfs_map

H100_SYSFS = "sysfs/gpud__sys-class-infiniband-h100.0"


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("4: ACTIVE\n", "ACTIVE"),
        ("1: DOWN", "DOWN"),
        ("2: INIT", "INIT"),
        ("Active", "ACTIVE"),
        ("Down", "DOWN"),
        ("Initializing", "INIT"),
        ("Armed", "ARMED"),
        ("PORT_ACTIVE (4)", "ACTIVE"),  # ibv_devinfo
        ("PORT_DOWN (1)", "DOWN"),
        ("4", "ACTIVE"),  # the number alone
        ("5: ACTIVE_DEFER", "ACTIVE_DEFER"),
        ("4: DOWN", None),  # number and name disagree
        ("5: LinkUp", None),  # a physical state in the state file
        ("9", None),
        ("ACTIVE; rm -rf /", None),
        ("\x00\xff", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_state(text: str | None, state: str | None) -> None:
    assert ib.parse_state(text) == state


@pytest.mark.parametrize(
    ("text", "phys"),
    [
        ("5: LinkUp\n", "LinkUp"),
        ("LinkUp", "LinkUp"),
        ("2: Polling", "Polling"),
        ("3: Disabled", "Disabled"),
        ("LINK_UP (5)", "LinkUp"),  # ibv_devinfo
        ("POLLING (2)", "Polling"),
        ("5", "LinkUp"),
        ("4: PortConfigurationTraining", "PortConfigurationTraining"),
        ("6: LinkErrorRecovery", "LinkErrorRecovery"),
        ("7: Phy Test", "Phy Test"),
        ("PhyTest", "Phy Test"),
        ("4: ACTIVE", None),  # the procfs fixture's mixup: a port state in phys_state
        ("ACTIVE", None),
        ("5: Polling", None),  # number and name disagree
        ("0", None),
        ("", None),
        (None, None),
        ("LinkUp" * 50, None),
    ],
)
def test_parse_phys_state(text: str | None, phys: str | None) -> None:
    assert ib.parse_phys_state(text) == phys


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("400 Gb/sec (4X NDR)\n", 400.0),
        ("200 Gb/sec (2X NDR)", 200.0),
        ("2.5 Gb/sec (1X SDR)", 2.5),
        ("10 Gb/sec (4X)", 10.0),
        ("400", 400.0),
        ("fast", None),
        ("", None),
    ],
)
def test_parse_rate(text: str, rate: float | None) -> None:
    assert ib.parse_rate(text) == rate


def test_normalise_guid() -> None:
    assert ib.normalise_guid("0a7f:bc12:45ef:d23b") == "0a7fbc1245efd23b"
    assert ib.normalise_guid("0xa088c20300adeab8") == "a088c20300adeab8"
    assert ib.normalise_guid("node_guid") is None and ib.normalise_guid(None) is None


@pytest.mark.parametrize(
    "path", recordings_in("infiniband", "gpud__ibstat.*"), ids=lambda p: p.name
)
def test_parse_ibstat_recordings(path: Path) -> None:
    text = path.read_text()
    ports = ib.parse_ibstat(text)
    assert len(ports) == len(re.findall(r"^\s*Port \d+:$", text, re.MULTILINE))
    assert sum(p.state == "ACTIVE" for p in ports) == text.count("State: Active")
    assert sum(p.state == "DOWN" for p in ports) == text.count("State: Down")
    assert sum(p.link_layer == "Ethernet" for p in ports) == text.count("Link layer: Ethernet")
    assert all(p.source == "ibstat" and p.port == 1 and p.fw_version for p in ports)


def test_parse_ibstat_polling_and_fields() -> None:
    ports = ib.parse_ibstat(
        recording("infiniband/gpud__ibstat.47.0.h100.some.down.with.polling.1").read_text()
    )
    by = {p.device: p for p in ports}
    assert (by["mlx5_11"].state, by["mlx5_11"].phys_state) == ("DOWN", "Polling")
    assert (by["mlx5_5"].state, by["mlx5_5"].phys_state) == ("DOWN", "Disabled")
    m = by["mlx5_0"]
    assert (m.hca_type, m.fw_version, m.rate_gbps) == ("MT4129", "28.39.1002", 400.0)
    assert m.node_guid == "a088c20300adeab8" and m.lid == 0


def test_parse_ibstat_partial_ibpanic_output() -> None:
    text = recording("infiniband/gpud__ibstat.39.0.a100.failed.ibpanic.exit-255.0").read_text()
    ports = ib.parse_ibstat(text)
    assert [p.device for p in ports] == [f"mlx5_{n}" for n in range(8)]
    assert ports[0].lid == 13247 and ports[0].link_layer == "InfiniBand"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\xff junk",
        "Port 1:\n\tState: Active\n",  # no CA header
        "CA 'mlx5_0'\n\tCA type: MT4129\n",  # a device with no port section
    ],
)
def test_parse_ibstat_malformed(text: str) -> None:
    assert ib.parse_ibstat(text) == []


def test_parse_ibstatus_is_not_ibstat() -> None:
    text = recording("infiniband/gpud__ibstatus.39.0.a100.all.active.0").read_text()
    assert ib.parse_ibstat(text) == []


def test_parse_ibstat_truncated() -> None:
    text = recording("infiniband/gpud__ibstat.47.0.h100.all.active.0").read_text()
    ports = ib.parse_ibstat(text[: text.index("CA 'mlx5_2'") + 40])
    assert [p.device for p in ports] == ["mlx5_0", "mlx5_1", "mlx5_10", "mlx5_11"]


def test_parse_counters() -> None:
    counters, bad = ib.parse_counters({"link_downed": "255\n", "symbol_error": "N/A (no PMA)"})
    assert counters == {"link_downed": 255} and bad == ["symbol_error"]


@pytest.fixture
def h100_tree(tmp_path: Path) -> Path:
    shutil.copytree(recording(H100_SYSFS), tmp_path / "sys/class/infiniband")
    return tmp_path


def test_collect_h100_sysfs_tree(h100_tree: Path) -> None:
    facts = ib.collect(TreeHost(h100_tree))
    assert len(facts.ports) == 9 and all(p.source == "sysfs" for p in facts.ports)
    by = {p.device: p for p in facts.ports}
    m1 = by["mlx5_1"]
    assert (m1.state, m1.phys_state, m1.rate_gbps, m1.link_layer) == (
        "ACTIVE",
        "LinkUp",
        400.0,
        "InfiniBand",
    )
    assert m1.counters["link_downed"] == 255 and m1.counters["port_rcv_errors"] == 14
    assert m1.counters["excessive_buffer_overrun_errors"] == 15
    assert not hasattr(m1, "hw_counters")  # no check judges the driver's hw_counters/
    assert (m1.fw_version, m1.hca_type, m1.board_id) == ("28.41.1000", "MT4129", "MT_0000000838")
    bond = by["mlx5_bond_0"]
    assert (bond.link_layer, bond.rate_gbps, bond.hca_type) == ("Ethernet", 200.0, "MT41692")
    assert bond.rate_text == "200 Gb/sec (2X NDR)" and bond.subject == "ib:mlx5_bond_0/1"
    # The tree has no commands/: ibstat was not in this bundle (not "missing" on the host).
    assert facts.unread["ibstat"] == "not in this bundle: ibstat"


def test_collect_sysfs_and_ibstat_cross_check(h100_tree: Path) -> None:
    ibstat = (
        "CA 'mlx5_0'\n\tCA type: MT4129\n\tFirmware version: 28.41.1000\n\tPort 1:\n"
        "\t\tState: Down\n\t\tPhysical state: Polling\n\t\tRate: 400\n"
        "\t\tLink layer: InfiniBand\n"
    )
    make_tree(h100_tree, commands={"ibstat": ibstat})
    facts = ib.collect(TreeHost(h100_tree))
    assert len(facts.ports) == 9 and facts.ports[0].state == "ACTIVE"  # sysfs wins
    assert [p.device for p in facts.ibstat] == ["mlx5_0"]
    assert "ib:mlx5_0/1: state is ACTIVE in sysfs, DOWN in ibstat" in facts.disagreements
    assert "ib:mlx5_0/1: phys_state is LinkUp in sysfs, Polling in ibstat" in facts.disagreements
    assert "ib:mlx5_1/1: in sysfs, not in ibstat" in facts.disagreements
    assert "ibstat" not in facts.unread


def test_collect_ibstat_only_and_ibpanic(tmp_path: Path) -> None:
    polling = recording("infiniband/gpud__ibstat.47.0.h100.some.down.with.polling.1")
    facts = ib.collect(
        TreeHost(make_tree(tmp_path / "a", commands={"ibstat": polling.read_text()}))
    )
    assert len(facts.ports) == 12 and facts.ports[0].source == "ibstat"
    assert facts.disagreements == () and facts.unread == {}
    panic = recording("infiniband/gpud__ibstat.39.0.a100.failed.ibpanic.exit-255.0").read_text()
    err = next(line for line in panic.splitlines() if line.startswith("ibpanic"))
    tree = make_tree(tmp_path / "b", commands={"ibstat": (panic, 255, err)})
    facts = ib.collect(TreeHost(tree))
    assert len(facts.ports) == 8
    assert facts.unread["ibstat"].startswith("command failed: ibstat: exit 255: ibpanic")


def test_collect_procfs_and_node_exporter_trees(tmp_path: Path) -> None:
    pf = extract_ttar(
        recording("procfs/procfs__fixtures.ttar"),
        tmp_path / "pf",
        strip="fixtures/",
        only=("sys/class/infiniband",),
    )
    facts = ib.collect(TreeHost(pf))
    assert [p.subject for p in facts.ports] == [
        "ib:hfi1_0/1",
        "ib:mlx4_0/1",
        "ib:mlx4_0/2",
        "ib:mlx5_0/1",
    ]
    mlx5 = facts.ports[-1]
    assert mlx5.node_guid == "0a7fbc1245efd23b" and mlx5.rate_gbps == 25.0
    # The fixture writes "4: ACTIVE" into phys_state (4 is PortConfigurationTraining there):
    # malformed and quoted, never read as a state.
    assert mlx5.phys_state is None and mlx5.state == "ACTIVE"
    assert facts.unread["mlx5_0/1.phys_state"] == "malformed: '4: ACTIVE'"
    assert facts.ports[0].hca_type is None and facts.ports[0].fw_version == "1.27.0"
    ne = extract_ttar(
        recording("sysfs/node_exporter__sys.ttar"), tmp_path / "ne", only=("sys/class/infiniband",)
    )
    facts = ib.collect(TreeHost(ne))
    i40 = next(p for p in facts.ports if p.device == "i40iw0")
    assert i40.counters == {} and i40.rate_gbps == 10.0
    assert facts.unread["i40iw0/1.counters"].startswith("not supported (N/A (no PMA))")
    mlx4 = next(p for p in facts.ports if p.subject == "ib:mlx4_0/1")
    assert mlx4.counters["port_xmit_discards"] == 5
    assert "port_xmit_wait" not in mlx4.counters  # 4294967295, congestion: no check judges it


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        ("gcm__learn_good.json", {}),
        ("gcm__learn_ib_intf_bad_rate.json", {"rate_gbps": 100.0}),
        ("gcm__learn_stuck_ib_intf.json", {"state": "INIT"}),
    ],
)
def test_collect_gcm_maps(tmp_path: Path, name: str, bad: dict[str, object]) -> None:
    facts = ib.collect(TreeHost(load_sysfs_map(recording(f"sysfs/{name}"), tmp_path)))
    assert len(facts.ports) == 8
    by = {p.device: p for p in facts.ports}
    assert by["mlx5_0"].pci_bdf == "0000:0c:00.0" and by["mlx5_9"].pci_bdf == "0000:cc:00.0"
    # GCM replaced identifiers by the field name: "lid" is not a LID, said so.
    assert by["mlx5_0"].lid is None and facts.unread["mlx5_0/1.lid"].startswith("malformed")
    assert by["mlx5_0"].node_guid is None and facts.unread["mlx5_0.node_guid"].startswith("malf")
    for field, value in bad.items():
        assert sum(getattr(p, field) == value for p in facts.ports) >= 2
    if not bad:
        assert {(p.state, p.phys_state, p.rate_gbps) for p in facts.ports} == {
            ("ACTIVE", "LinkUp", 200.0)
        }


def test_collect_junk_port_files(tmp_path: Path) -> None:
    base = "sys/class/infiniband/mlx5_0/ports/1"
    root = make_tree(
        tmp_path,
        files={
            f"{base}/state": "\x00\xff",
            f"{base}/phys_state": "",
            f"{base}/rate": "unknown",
            f"{base}/counters/symbol_error": "12\n",
            f"{base}/counters/link_downed": "junk\n",
        },
    )
    facts = ib.collect(TreeHost(root))
    (port,) = facts.ports
    assert port.state is None and facts.unread["mlx5_0/1.state"].startswith("malformed")
    assert port.rate_gbps is None and facts.unread["mlx5_0/1.rate_gbps"].startswith("malformed")
    assert port.counters == {"symbol_error": 12}
    assert facts.unread["mlx5_0/1.counters"].startswith("malformed")
    assert facts.unread["mlx5_0.fw_version"] == "missing"


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_link_layer_that_is_not_a_file_is_unread_not_infiniband(
    h100_tree: Path, kind: str
) -> None:
    """A FIFO at the RoCE port's link_layer read as no link layer, and so as InfiniBand:
    interconnect.ib.rate then held the Ethernet port to the InfiniBand capability (warn)."""
    layer = h100_tree / "sys/class/infiniband/mlx5_bond_0/ports/1/link_layer"
    layer.unlink()
    (os.mkfifo if kind == "fifo" else os.mkdir)(layer)
    facts = ib.collect(TreeHost(h100_tree))
    bond = next(p for p in facts.ports if p.device == "mlx5_bond_0")
    assert bond.link_layer is None and bond.state == "ACTIVE"
    assert facts.unread["mlx5_bond_0/1.link_layer"].startswith("unreadable (")
    assert "mlx5_1/1.link_layer" not in facts.unread  # read ones are not listed


def test_live_smoke() -> None:
    facts = ib.collect(LiveHost())
    assert json.loads(json.dumps(to_jsonable(facts)))  # dolmen facts --json
    assert isinstance(facts.ports, tuple)
    if not Path("/sys/class/infiniband").is_dir():
        assert facts.ports == () or all(p.source == "ibstat" for p in facts.ports)
    for p in facts.ports:
        assert p.device and p.port >= 1


def test_sysfs_reads_every_counter_a_check_judges() -> None:
    """Only COUNTERS are read (the quick tier's start): each check's counters are in it."""
    from dolmen.checks.interconnect.ib_errors import ERROR_THRESHOLDS
    from dolmen.facts.infiniband.sysfs import COUNTERS

    assert {*ERROR_THRESHOLDS, "link_downed"} == COUNTERS


def test_collect_reads_only_the_judged_counters(h100_tree: Path) -> None:
    m1 = {p.device: p for p in ib.collect(TreeHost(h100_tree)).ports}["mlx5_1"]
    assert "port_xmit_data" not in m1.counters and m1.counters["symbol_error"] == 0
