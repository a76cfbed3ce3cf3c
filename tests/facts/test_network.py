"""Network facts: interfaces from sysfs trees (GCM IB node and its fault variants), live."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.facts import network, to_jsonable
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording
from tests.facts.trees import extract_ttar, load_sysfs_map


@pytest.mark.parametrize(
    ("text", "expected"), [("1\n", True), ("0", False), ("", None), ("2", None), ("\x00", None)]
)
def test_parse_carrier(text: str, expected: bool | None) -> None:
    assert network.parse_carrier(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("200000\n", 200000), ("1000", 1000), ("-1", None), ("0", None), ("", None), ("x", None)],
)
def test_parse_speed(text: str, expected: int | None) -> None:
    assert network.parse_speed(text) == expected


def _gcm(name: str, tmp_path: Path) -> tuple[network.NetworkFacts, dict[str, str]]:
    rec = recording(f"sysfs/{name}")
    facts = network.collect(TreeHost(load_sysfs_map(rec, tmp_path)))
    return facts, json.loads(rec.read_text())


def test_collect_gcm_good_ib_node(tmp_path: Path) -> None:
    facts, data = _gcm("gcm__learn_good.json", tmp_path)
    names = sorted({k.split("/")[7] for k in data if "/net/" in k})
    assert [i.name for i in facts.interfaces] == names == [f"ib{n}" for n in range(8)]
    ib0 = facts.by_name()["ib0"]
    assert (ib0.operstate, ib0.carrier, ib0.speed_mbps, ib0.mtu) == ("up", True, 200000, 2044)
    assert (ib0.link_type, ib0.link_kind, ib0.duplex) == (32, "infiniband", "full")
    assert (ib0.carrier_changes, ib0.carrier_up_count, ib0.carrier_down_count) == (3, 2, 1)
    assert ib0.pci_bdf == "0000:0c:00.0" and ib0.virtual is False and ib0.subject == "nic:ib0"


def test_collect_gcm_operstate_down(tmp_path: Path) -> None:
    facts, _ = _gcm("gcm__learn_ib_intf_operstate_down.json", tmp_path)
    ib4 = facts.by_name()["ib4"]
    assert ib4.operstate == "down" and ib4.carrier is None and ib4.speed_mbps is None
    assert ib4.carrier_changes == 98 and ib4.carrier_down_count == 49  # a flapping port
    assert facts.unread["ib4.carrier"] == "not supported (interface is down)"
    assert facts.unread["ib4.speed_mbps"] == "not supported (interface is down)"
    assert all(i.operstate == "up" for i in facts.interfaces if i.name != "ib4")


def test_collect_gcm_stuck_interfaces(tmp_path: Path) -> None:
    facts, _ = _gcm("gcm__learn_stuck_ib_intf.json", tmp_path)
    stuck = {i.name for i in facts.interfaces if i.operstate == "down"}
    assert stuck == {"ib4", "ib6"}
    by = facts.by_name()
    assert by["ib4"].carrier is False and by["ib4"].mtu == 4092 and by["ib4"].carrier_changes == 0


def test_collect_ttar_trees(tmp_path: Path) -> None:
    ne = extract_ttar(
        recording("sysfs/node_exporter__sys.ttar"),
        tmp_path / "ne",
        only=("sys/class/net", "sys/devices"),
    )
    facts = network.collect(TreeHost(ne))
    assert [i.name for i in facts.interfaces] == ["bond0", "dmz", "eth0", "int"]  # no masters
    bond = facts.by_name()["bond0"]
    assert bond.speed_mbps is None and facts.unread["bond0.speed_mbps"].startswith("not supp")
    assert facts.by_name()["dmz"].speed_mbps == 1000
    # eth0 is a link into sys/devices here: its PCI address comes from the link target.
    assert facts.by_name()["eth0"].pci_bdf == "0000:03:00.0"
    pf = extract_ttar(
        recording("procfs/procfs__fixtures.ttar"),
        tmp_path / "pf",
        strip="fixtures/",
        only=("sys/class/net",),
    )
    (eth0,) = network.collect(TreeHost(pf)).interfaces
    assert eth0.pci_bdf == "0000:00:1f.6" and eth0.virtual is False and eth0.mtu == 1500


def test_collect_junk_and_missing(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        files={
            "sys/class/net/eth9/operstate": "up\n",
            "sys/class/net/eth9/mtu": "\x00\xff",
            "sys/class/net/eth9/carrier": "yes",
            "sys/class/net/eth9/speed": "fast",
        },
    )
    facts = network.collect(TreeHost(root))
    (eth9,) = facts.interfaces
    assert eth9.mtu is None and facts.unread["eth9.mtu"].startswith("malformed")
    assert eth9.carrier is None and facts.unread["eth9.carrier"].startswith("malformed")
    assert facts.unread["eth9.carrier_changes"] == "missing"
    empty = network.collect(TreeHost(make_tree(tmp_path / "empty")))  # no sys/ captured
    assert empty.interfaces == () and empty.unread["interfaces"] == "not in this bundle: " + (
        "sys/class/net"
    )
    other = network.collect(TreeHost(make_tree(tmp_path / "other", files={"sys/x": "1"})))
    assert other.unread["interfaces"].startswith("missing")  # sys/ captured, without net


def test_live_smoke() -> None:
    facts = network.collect(LiveHost())
    assert json.loads(json.dumps(to_jsonable(facts)))  # dolmen facts --json
    by = facts.by_name()
    assert "lo" in by and by["lo"].link_kind == "loopback" and by["lo"].virtual is True
    assert set(by) == {p.name for p in Path("/sys/class/net").iterdir() if p.is_dir()}
    for i in facts.interfaces:
        assert i.mtu is not None and i.mtu > 0 and i.operstate
