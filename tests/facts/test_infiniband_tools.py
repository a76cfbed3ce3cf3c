"""InfiniBand facts from the tools alone: ibstatus (gpud's real A100 recording), ibv_devinfo
(no licensed recording exists: the inputs below are written from rdma-core's documented
output format, libibverbs/examples/devinfo.c), ibstat's vanished devices, and why a bundle
without any source says "not in this bundle"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.facts import infiniband as ib
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording

IBSTATUS = "infiniband/gpud__ibstatus.39.0.a100.all.active.0"
PANIC = "infiniband/gpud__ibstat.39.0.a100.failed.ibpanic.exit-255.0"

# Written from the documented format (tabs as devinfo.c prints them), not a recording.
DEVINFO_V = (
    "hca_id:\tmlx5_0\n"
    "\ttransport:\t\t\tInfiniBand (0)\n"
    "\tfw_ver:\t\t\t\t20.37.1700\n"
    "\tnode_guid:\t\t\tb83f:d203:00aa:bb01\n"
    "\tvendor_id:\t\t\t0x02c9\n"
    "\tvendor_part_id:\t\t\t4123\n"
    "\tboard_id:\t\t\tMT_0000000222\n"
    "\tphys_port_cnt:\t\t\t1\n"
    "\t\tport:\t1\n"
    "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
    "\t\t\tmax_mtu:\t\t4096 (5)\n"
    "\t\t\tsm_lid:\t\t\t1\n"
    "\t\t\tport_lid:\t\t4\n"
    "\t\t\tlink_layer:\t\tInfiniBand\n"
    "\t\t\tactive_width:\t\t4X (2)\n"
    "\t\t\tactive_speed:\t\t25.0 Gbps (32)\n"
    "\t\t\tphys_state:\t\tLINK_UP (5)\n"
    "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:b83f:d203:00aa:bb01\n"
    "\n"
    "hca_id:\tmlx5_1\n"
    "\tfw_ver:\t\t\t\t20.37.1700\n"
    "\tvendor_part_id:\t\t\t4123\n"
    "\t\tport:\t1\n"
    "\t\t\tstate:\t\t\tPORT_DOWN (1)\n"
    "\t\t\tport_lid:\t\t65535\n"
    "\t\t\tlink_layer:\t\tInfiniBand\n"
    "\t\t\tactive_width:\t\t4X (2)\n"
    "\t\t\tactive_speed:\t\t2.5 Gbps (1)\n"
    "\t\t\tphys_state:\t\tPOLLING (2)\n"
)
# Without -v: no width, speed or physical state.
DEVINFO = "hca_id:\tmlx5_2\n\tvendor_part_id:\t\t\t4129\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tlink_layer:\t\tEthernet\n"


def _bundle(root: Path, commands: dict[str, str | tuple[str, int] | tuple[str, int, str]]) -> Path:
    """A pasted file: a partial tree (nothing absent from it is evidence)."""
    make_tree(root, files={"dolmen-snapshot.json": json.dumps({"partial": True})})
    return make_tree(root, commands=commands)


def test_parse_ibstatus_recording() -> None:
    ports = ib.parse_ibstatus(recording(IBSTATUS).read_text())
    assert [p.device for p in ports] == [f"mlx5_{n}" for n in range(9)]
    first = ports[0]
    assert (first.state, first.phys_state, first.rate_gbps, first.active_width) == (
        "ACTIVE",
        "LinkUp",
        200.0,
        "4X",
    )
    assert first.lid == 0x33BF == 13247  # the same node's ibstat prints Base lid: 13247
    assert first.link_layer == "InfiniBand" and first.source == "ibstatus"
    assert (ports[8].link_layer, ports[8].rate_gbps) == ("Ethernet", 40.0)


@pytest.mark.parametrize(
    "text",
    ["", "\x00\xff junk", "state: 4: ACTIVE\n", "Infiniband device 'mlx5_0' po"],
)
def test_parse_ibstatus_junk_and_truncated(text: str) -> None:
    assert ib.parse_ibstatus(text) == []


def test_parse_ibstatus_truncated_in_a_block() -> None:
    text = recording(IBSTATUS).read_text()
    cut = text[: text.index("phys state") + 5]
    (port,) = ib.parse_ibstatus(cut)
    assert port.state == "ACTIVE" and port.phys_state is None and port.rate_gbps is None


def test_parse_ibv_devinfo_verbose() -> None:
    a, b = ib.parse_ibv_devinfo(DEVINFO_V)
    assert (a.device, a.state, a.phys_state, a.rate_gbps, a.active_width) == (
        "mlx5_0",
        "ACTIVE",
        "LinkUp",
        100.0,  # 4 lanes x 25 Gbps (EDR)
        "4X",
    )
    assert (a.hca_type, a.fw_version, a.board_id, a.lid) == (
        "MT4123",
        "20.37.1700",
        "MT_0000000222",
        4,
    )
    assert a.node_guid == "b83fd20300aabb01" and a.source == "ibv_devinfo"
    assert (b.state, b.phys_state) == ("DOWN", "Polling")


def test_parse_ibv_devinfo_plain_has_no_rate() -> None:
    (p,) = ib.parse_ibv_devinfo(DEVINFO)
    assert (p.state, p.phys_state, p.rate_gbps, p.link_layer) == (
        "ACTIVE",
        None,
        None,
        "Ethernet",
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "No IB devices found\n",
        "port:\t1\n\tstate:\tPORT_ACTIVE (4)\n",  # no hca_id
        "hca_id:\tmlx5_0\n\tfw_ver:\t1\n",  # no port section
        "hca_id:\tmlx5_0\n\t\tport:\tone\n",
        "hca_id:\t\n\t\tport:\t1\n",
        DEVINFO_V[:40],
    ],
)
def test_parse_ibv_devinfo_junk(text: str) -> None:
    assert ib.parse_ibv_devinfo(text) == []


@pytest.mark.parametrize(
    ("text", "lost"),
    [
        (
            "ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed: No such file or directory",
            {"mlx5_8"},
        ),
        ("ibwarn: [3] umad_init: can't read ABI version", set()),
        ("stat of IB device '' failed", set()),
        ("IB device 'mlx5_1' failed\nIB device 'mlx5_1' failed: again", {"mlx5_1"}),
    ],
)
def test_lost_devices(text: str, lost: set[str]) -> None:
    assert set(ib.lost_devices(text)) == lost


def test_collect_ibpanic_pasted_without_exit_code(tmp_path: Path) -> None:
    """A pasted ibstat keeps its ibpanic line, not its exit code: the device is still lost."""
    facts = ib.collect(TreeHost(_bundle(tmp_path, {"ibstat": recording(PANIC).read_text()})))
    assert len(facts.ports) == 8 and set(facts.lost_devices) == {"mlx5_8"}
    assert "stat of IB device 'mlx5_8' failed" in facts.lost_devices["mlx5_8"]
    assert ib.why_no_ports(facts) is None


def test_collect_from_ibstatus_and_ibv_devinfo_alone(tmp_path: Path) -> None:
    facts = ib.collect(
        TreeHost(_bundle(tmp_path / "a", {"ibstatus": recording(IBSTATUS).read_text()}))
    )
    assert len(facts.ports) == 9 and facts.read == ("ibstatus",)
    assert all(p.source == "ibstatus" for p in facts.ports)
    facts = ib.collect(TreeHost(_bundle(tmp_path / "b", {"ibv_devinfo": DEVINFO_V})))
    assert [p.subject for p in facts.ports] == ["ib:mlx5_0/1", "ib:mlx5_1/1"]


def test_collect_union_of_the_tools_best_first(tmp_path: Path) -> None:
    """Without sysfs a port shown by any tool exists; ibstat's reading wins over ibstatus'."""
    panic = recording(PANIC).read_text()
    root = _bundle(tmp_path, {"ibstat": panic, "ibstatus": recording(IBSTATUS).read_text()})
    facts = ib.collect(TreeHost(root))
    by = {p.device: p for p in facts.ports}
    assert len(by) == 9 and by["mlx5_0"].source == "ibstat"
    assert by["mlx5_8"].source == "ibstatus"  # ibstat lost it; ibstatus shows it
    assert facts.lost_devices == {}  # a source shows the device: not lost


def test_collect_nothing_in_the_bundle(tmp_path: Path) -> None:
    facts = ib.collect(TreeHost(_bundle(tmp_path, {"nvidia-smi": "x"})))
    assert facts.ports == () and facts.read == ()
    why = "not in this bundle: sys/class/infiniband, ibstat, ibstatus, ibv_devinfo"
    assert facts.unread["ports"] == why and ib.why_no_ports(facts) == why


def test_collect_tool_that_lists_nothing(tmp_path: Path) -> None:
    root = make_tree(tmp_path, files={"sys/class/net/lo/mtu": "1"}, commands={"ibstat": ""})
    facts = ib.collect(TreeHost(root))
    why = ib.why_no_ports(facts)
    assert why and why.startswith("no InfiniBand/RoCE ports on this host (missing:")
    assert "ibstat: no device listed" in why
