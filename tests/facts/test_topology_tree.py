"""The topology from the PCI tree: link targets, NCCL's folded tree, the path table, the
real 8x H100 HGX lspci -vvv (its bridges' bus ranges), the rails scenario, hostile and
partial trees, GID tables, and agreement with a recorded nvidia-smi topo -m."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dolmen.facts.network import parse_default_route
from dolmen.facts.pci.lspci import parse_lspci_vvv
from dolmen.facts.topology import collect, collect_tree, compare
from dolmen.facts.topology.gids import ipv4_mapped, pick_roce_v2, read_roce_v2_index
from dolmen.facts.topology.model import PathKind
from dolmen.facts.topology.sysfs import parse_cpuid
from dolmen.facts.topology.tree import chain_from_link, folded, pcie_path
from dolmen.facts.topology.tree_model import GPU, NIC, CpuId, Device
from dolmen.host import open_host
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording
from tests.hosts import scenarios

TOPO_M = "commands/nvidia-smi%20topo%20-m"


@pytest.fixture(scope="module")
def rails(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenarios.build("h100-hgx-rails", tmp_path_factory.mktemp("rails") / "tree")


@pytest.mark.parametrize(
    ("target", "root", "chain"),
    [
        (
            "../../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0",
            "pci0000:15",
            ("0000:15:01.0", "0000:16:00.0", "0000:17:01.0"),
        ),
        ("../../../devices/pci0000:00/0000:00:02.0", "pci0000:00", ()),
        ("../../../devices/platform/foo", None, ()),  # not a PCI device
        ("", None, ()),
    ],
)
def test_chain_from_link(target: str, root: str | None, chain: tuple[str, ...]) -> None:
    assert chain_from_link(target) == (root, chain)


@pytest.mark.parametrize(
    ("chain", "kept"),
    [
        ((), ()),
        (("rp",), ()),  # a root port and its slot: under the CPU
        (("rp", "up", "down"), ("up",)),  # one switch: its upstream port
        (("rp", "up1", "dn1", "up2", "dn2"), ("up1", "up2")),  # nested switches
    ],
)
def test_folded_keeps_every_other_bridge_as_nccl_walks(
    chain: tuple[str, ...], kept: tuple[str, ...]
) -> None:
    assert folded(chain) == kept


def _dev(label: str, root: str | None, chain: tuple[str, ...], node: int | None) -> Device:
    return Device(label, GPU if label.startswith("GPU") else NIC, label, root, chain, node, None)


@pytest.mark.parametrize(
    ("a", "b", "single", "kind"),
    [
        (("r", ("rp", "up", "d1"), 0), ("r", ("rp", "up", "d2"), 0), False, PathKind.PIX),
        (("r", ("rp", "up", "d1", "u2", "x"), 0), ("r", ("rp", "up", "d2"), 0), False, "PXB"),
        (("r", ("rp1",), 0), ("r", ("rp2",), 0), False, PathKind.PHB),
        (("r1", (), 0), ("r2", (), 0), False, PathKind.NODE),
        (("r1", (), 0), ("r2", (), 1), False, PathKind.SYS),
        (("r1", (), None), ("r2", (), 1), False, None),  # NUMA unknown: not guessed
        (("r1", (), None), ("r2", (), None), True, PathKind.NODE),  # one node: no other
        ((None, (), 0), ("r", (), 0), False, None),
    ],
)
def test_pcie_path(a: tuple, b: tuple, single: bool, kind: object) -> None:  # type: ignore[type-arg]
    want = PathKind(kind) if isinstance(kind, str) else kind
    assert pcie_path(_dev("GPU0", *a), _dev("NIC0", *b), single) is want


def test_recorded_hgx_h100_lspci_gives_each_gpu_its_connectx7_on_its_switch() -> None:
    """gpud's real lspci -vvv of an 8x H100 SXM5 HGX node: bus ranges give the tree."""
    path = recording("lspci/gpud__lspci-vvv")
    by = {d.bdf: d for d in parse_lspci_vvv(path.read_text())}
    assert by["0000:19:00.0"].parent == "0000:17:01.0"  # GPU under a PEX890xx port
    assert by["0000:17:01.0"].parent == "0000:16:00.0" and by["0000:15:01.0"].parent is None
    with open_host(path) as host:
        topo = collect_tree(host)
    assert topo.source == "lspci -vvv"
    assert len(topo.gpus) == 8 and len(topo.nvswitches) == 4 and len(topo.nics) == 12
    cx7 = ["1a", "3c", "4d", "5e", "9c", "bc", "cc", "dc"]  # "MT2910 Family [ConnectX-7]"
    for g, rail in zip(topo.gpus, cx7, strict=True):
        near = [topo.by_label()[n] for n in topo.closest_nics(g.label)]
        assert {str(topo.path(g.label, n.label)) for n in near} == {"PIX"}
        assert f"0000:{rail}:00.0" in [n.bdf for n in near]
    assert [g.numa_node for g in topo.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert str(topo.path("GPU0", "GPU1")) == "NODE" and str(topo.path("GPU0", "GPU4")) == "SYS"
    assert "indices follow PCI order" in topo.unread["gpu.index"]


def test_lspci_bridges_that_point_at_each_other_do_not_loop(tmp_path: Path) -> None:
    text = (
        "01:00.0 PCI bridge: X\n\tBus: primary=02, secondary=02, subordinate=02\n\n"
        "02:00.0 PCI bridge: X\n\tBus: primary=01, secondary=01, subordinate=01\n\n"
        "02:01.0 3D controller: NVIDIA Corporation Device 2330\n\tNUMA node: 0\n"
    )
    tree = make_tree(tmp_path, commands={"lspci -vvv": text})
    topo = collect_tree(TreeHost(tree))
    assert len(topo.gpus) == 1 and len(topo.gpus[0].chain) <= 32


def test_rails_scenario(rails: Path) -> None:
    topo = collect_tree(TreeHost(rails))
    assert topo.nvlink == "nvswitch" and topo.gdr is True
    assert str(topo.path("GPU0", "GPU7")) == "NV18"
    names = [topo.by_label()[topo.closest_nics(g.label)[0]].name for g in topo.gpus]
    assert names == ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]
    bond = topo.by_label()["NIC8"]
    assert bond.name == "mlx5_bond_0" and bond.ports[0].roce_v2_gid == 3
    assert topo.cpu == CpuId("x86_64", "GenuineIntel", 6, 143)


def _hosts_with_both(tmp: Path) -> list[tuple[str, Path]]:
    """Scenario trees and recorded trees holding a PCI tree and nvidia-smi topo -m."""
    found = []
    for name in scenarios.names():
        try:
            tree = scenarios.build(name, tmp / name)
        except scenarios.MissingRecording:
            continue
        if (tree / "sys/bus/pci/devices").is_dir() and (tree / TOPO_M).is_file():
            found.append((name, tree))
    if scenarios.RECORDINGS.is_dir():
        for pci in scenarios.RECORDINGS.rglob("sys/bus/pci/devices"):
            root = pci.parents[3]
            if (root / TOPO_M).is_file():
                found.append((str(root), root))
    return found


def test_the_tree_agrees_with_every_recorded_nvidia_smi_topo_m(tmp_path: Path) -> None:
    """Issue 11's figure: wherever a host has both, every cell and affinity agrees."""
    both = _hosts_with_both(tmp_path)
    assert [n for n, _ in both if not n.startswith("/")] == ["h100-hgx-rails"]
    for name, tree in both:
        host = TreeHost(tree)
        matrix = collect(host).matrix
        assert matrix is not None, name
        lines, compared, agreed = compare(collect_tree(host), matrix)
        assert lines == () and compared == agreed > 100, (name, lines)


def test_disagreements_are_named_cell_by_cell(rails: Path, tmp_path: Path) -> None:
    tree = tmp_path / "t"
    shutil.copytree(rails, tree, symlinks=True)
    text = (tree / TOPO_M).read_text().splitlines()
    text[1] = text[1].replace("NV18\tPIX\t", "NV18\tNODE\t", 1)  # GPU0-NIC0
    text[5] = text[5].replace("56-111,168-223\t1\t", "56-111,168-223\t0\t")  # GPU4's node
    (tree / TOPO_M).write_text("\n".join(text) + "\n")
    host = TreeHost(tree)
    matrix = collect(host).matrix
    assert matrix is not None
    lines, compared, agreed = compare(collect_tree(host), matrix)
    assert lines == (
        "GPU0-NIC0: nvidia-smi prints NODE, the PCI tree gives PIX",
        "GPU4: NUMA 0 in nvidia-smi, 1 in sysfs",
    )
    assert compared - agreed == 2


def test_topo_reads_nvidia_smi_topo_m_once_where_the_tree_needs_it(
    rails: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without an NVSwitch in the tree the NV cells come from nvidia-smi topo -m, which
    ``dolmen topo`` also compares with: one run for both (seconds each on a live host)."""
    import dolmen.facts.topology as topology
    from dolmen.cli.topo_run import read_topo

    tree = tmp_path / "t"
    shutil.copytree(rails, tree, symlinks=True)
    devices = tree / "sys/bus/pci/devices"
    for dev in list(devices.iterdir()):
        if (dev / "class").read_text().strip() == "0x068000":  # the NVSwitches
            dev.unlink()
    runs: list[str] = []
    real = topology.collect

    def counted(host: TreeHost) -> object:
        runs.append("nvidia-smi topo -m")
        return real(host)

    monkeypatch.setattr(topology, "collect", counted)
    topo, matrix, _ = read_topo(str(tree))
    assert topo.nvlink == "nvidia-smi topo -m" and str(topo.path("GPU0", "GPU7")) == "NV18"
    assert matrix is not None and runs == ["nvidia-smi topo -m"]


def test_a_tree_without_pci_or_without_links(tmp_path: Path) -> None:
    empty = collect_tree(TreeHost(make_tree(tmp_path / "a")))
    assert empty.devices == () and empty.unread["devices"]
    flat = make_tree(
        tmp_path / "b",
        files={
            "sys/bus/pci/devices/0000:19:00.0/vendor": "0x10de\n",
            "sys/bus/pci/devices/0000:19:00.0/device": "0x2330\n",
            "sys/bus/pci/devices/0000:19:00.0/class": "0x030200\n",
        },
    )
    topo = collect_tree(TreeHost(flat))  # a folder, not a link: no place in the tree
    assert [g.root for g in topo.gpus] == [None]
    assert topo.unread["GPU0.path"].startswith("missing (no PCI location")


@pytest.mark.parametrize(
    ("gid", "mapped"),
    [
        ("0000:0000:0000:0000:0000:ffff:0a00:0005", True),
        ("fe80:0000:0000:0000:0ac0:ebff:fe12:3456", False),
        ("not a gid", False),
        ("", False),
    ],
)
def test_ipv4_mapped(gid: str, mapped: bool) -> None:
    assert ipv4_mapped(gid) is mapped


def test_pick_roce_v2() -> None:
    v4 = "0000:0000:0000:0000:0000:ffff:0a00:0005"
    ll = "fe80:0000:0000:0000:0ac0:ebff:fe12:3456"
    assert pick_roce_v2([(0, ll, "RoCE v2"), (2, v4, "IB/RoCE v1"), (3, v4, "RoCE v2\n")]) == 3
    assert pick_roce_v2([(0, ll, "RoCE v2"), (2, v4, "IB/RoCE v1")]) is None


def test_gid_index_reads_only_ethernet_ports(rails: Path) -> None:
    host = TreeHost(rails)
    assert read_roce_v2_index(host, "mlx5_bond_0", 1, "Ethernet") == (3, "")
    assert read_roce_v2_index(host, "mlx5_0", 1, "InfiniBand") == (None, "")
    index, why = read_roce_v2_index(host, "mlx5_0", 1, "Ethernet")
    assert index is None and why.startswith("missing")


@pytest.mark.parametrize(
    ("text", "cpu"),
    [
        (
            "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n\n"
            "processor\t: 1\nvendor_id\t: GenuineIntel\n",
            CpuId("x86_64", "AuthenticAMD", 25, 17),
        ),
        ("processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n", CpuId("arm64")),
        ("", CpuId()),
        ("garbage without colons\n", CpuId()),
    ],
)
def test_parse_cpuid(text: str, cpu: CpuId) -> None:
    assert parse_cpuid(text) == cpu


@pytest.mark.parametrize(
    ("text", "iface"),
    [
        (
            "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n"
            "eth1\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\n"
            "eth0\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\n",
            "eth0",
        ),
        ("Iface\tDestination\n", None),
        ("Iface\nbad line\n", None),
        ("", None),
    ],
)
def test_parse_default_route(text: str, iface: str | None) -> None:
    assert parse_default_route(text) == iface
