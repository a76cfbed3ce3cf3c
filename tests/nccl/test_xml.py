"""NCCL_TOPO_FILE: the XML against NCCL's parser grammar (tests/nccl/ncclxml.py), its
nesting against NCCL's own walk, the cpumap, and trees that cannot give one."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.facts.topology import collect_tree
from dolmen.host import open_host
from dolmen.host.tree import TreeHost
from dolmen.nccl.xml import XmlGap, cpumap, topo_xml
from tests.conftest import make_tree, recording
from tests.hosts import scenarios
from tests.nccl.ncclxml import Refused, load, walk


@pytest.fixture(scope="module")
def rails(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenarios.build("h100-hgx-rails", tmp_path_factory.mktemp("rails") / "tree")


@pytest.mark.parametrize(
    ("cpus", "highest", "text"),
    [
        ([0, 1, 2, 3], 3, "0000000f"),
        ([32], 63, "00000001,00000000"),
        (
            list(range(56)) + list(range(112, 168)),
            223,
            "00000000,000000ff,ffffffff,ffff0000,00000000,00ffffff,ffffffff",
        ),
        ([], 0, "00000000"),
    ],
)
def test_cpumap_is_the_kernels_node_cpumap(cpus: list[int], highest: int, text: str) -> None:
    assert cpumap(cpus, highest) == text


def test_rails_file_loads_as_nccl_reads_it(rails: Path) -> None:
    text, notes = topo_xml(collect_tree(TreeHost(rails)))
    assert not text.startswith("<?") and "\t" not in text and notes == ()
    system = load(text)
    cpus = {c.attrs["numaid"]: c for c in system.subs}
    assert set(cpus) == {"0", "1"}
    assert cpus["0"].attrs["vendor"] == "GenuineIntel" and cpus["0"].attrs["modelid"] == "143"
    gpus = [n for n in walk(system) if n.name == "gpu"]
    assert [g.attrs["dev"] for g in gpus] == [str(i) for i in range(8)]
    assert {g.attrs["sm"] for g in gpus} == {"90"} and {g.attrs["gdr"] for g in gpus} == {"1"}
    links = [n for n in walk(system) if n.name == "nvlink"]
    assert len(links) == 8 and {n.attrs["tclass"] for n in links} == {"0x068000"}
    assert {n.attrs["count"] for n in links} == {"18"}
    # Each GPU and its rail's HCA are siblings under the switch NCCL's walk keeps (PIX).
    for pci in (n for n in walk(system) if n.name == "pci" and n.attrs["class"] == "0x060400"):
        kinds = sorted(s.subs[0].name for s in pci.subs)
        assert kinds == ["gpu", "nic"], pci.attrs["busid"]
    nets = {n.attrs["name"]: n.attrs for n in walk(system) if n.name == "net"}
    assert nets["mlx5_0"]["speed"] == "400000" and nets["mlx5_0"]["port"] == "1"
    assert nets["mlx5_bond_0"]["speed"] == "200000"


def test_real_lspci_tree_nests_as_ncclTopoGetXmlFromSys_would() -> None:
    with open_host(recording("lspci/gpud__lspci-vvv")) as host:
        text, notes = topo_xml(collect_tree(host))
    system = load(text)
    tops = {p.attrs["busid"] for c in system.subs for p in c.subs}
    # two levels up from 0000:19:00.0 (0000:17:01.0 is skipped, as NCCL skips it)
    assert "0000:16:00.0" in tops and "0000:17:01.0" not in text
    assert len([n for n in walk(system) if n.name == "gpu"]) == 8
    assert any("left out" in n for n in notes)  # NICs without an RDMA name: NCCL's to place


def test_the_grammar_oracle_refuses_what_nccl_refuses() -> None:
    with pytest.raises(Refused):
        load('<?xml version="1.0"?>\n<system version="1"></system>\n')
    with pytest.raises(Refused):
        load('<system version="1">\n\t<cpu numaid="0"></cpu>\n</system>\n')
    with pytest.raises(Refused):
        load('<system version="2"></system>\n')
    with pytest.raises(Refused):
        load('<system version="1"><cpu numaid="0"><gpu dev="0"/></cpu></system>')


def test_trees_that_cannot_give_a_file(tmp_path: Path) -> None:
    with pytest.raises(XmlGap, match="no NVIDIA GPU"):
        topo_xml(collect_tree(TreeHost(make_tree(tmp_path / "a"))))
    flat = make_tree(
        tmp_path / "b",
        files={
            "sys/bus/pci/devices/0000:19:00.0/vendor": "0x10de\n",
            "sys/bus/pci/devices/0000:19:00.0/class": "0x030200\n",
        },
    )
    with pytest.raises(XmlGap, match="GPU0 without a PCI location"):
        topo_xml(collect_tree(TreeHost(flat)))
