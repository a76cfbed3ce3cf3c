"""The topology read back from ``dolmen.topo/1`` and from the part a verdict carries
(``inventory.topology.tree``): the same SVG as from the facts on the 8-GPU host trees
(the rails scenario with NVSwitches and a NIC per switch, the healthy HGX node whose
NICs have no PCI function, gpud's real lspci -vvv of an HGX node), the verdict's part
built from the run's own facts, malformed and hostile documents."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from dolmen.checks.model import Level
from dolmen.checks.suite import validate
from dolmen.facts.topology import HostTopology, collect_tree
from dolmen.facts.topology.tree_json import picture_part
from dolmen.host import open_host
from dolmen.report.topology.document import topo_doc
from dolmen.report.topology.rebuild import MAX_DEVICES, rebuild
from dolmen.report.topology.svg import render_svg
from tests.conftest import recording
from tests.hosts import scenarios
from tests.report.edit import DELETE, set_at

SVG = "{http://www.w3.org/2000/svg}"
HOSTS = ("h100-hgx-rails", "h100-hgx-healthy")


@pytest.fixture(scope="module", params=HOSTS)
def host_tree(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    name: str = request.param
    return scenarios.build(name, tmp_path_factory.mktemp(name) / "tree")


def _json(value: Any) -> Any:
    """Through JSON text and back, as a document travels."""
    return json.loads(json.dumps(value))


def _doc(topo: HostTopology) -> dict[str, Any]:
    doc: dict[str, Any] = _json(topo_doc(topo, {"hostname": "n1"}, None))
    return doc


def test_the_document_gives_back_the_same_picture(host_tree: Path) -> None:
    with open_host(host_tree) as host:
        topo = collect_tree(host)
    doc = _doc(topo)
    again = rebuild(doc)
    assert render_svg(again, "n1 (sysfs)") == render_svg(topo, "n1 (sysfs)")
    # and the same document: every field it holds came back
    assert _doc(again) == doc
    assert len(again.gpus) == 8 and again.numa == topo.numa and again.paths == topo.paths


def test_the_verdict_part_is_the_run_s_own_topology(host_tree: Path) -> None:
    """A standard run builds the part from the facts its checks loaded: the same topology
    as ``collect_tree`` reading them itself, and the same picture once rebuilt."""
    with open_host(host_tree) as host:
        verdict = validate(host, level=Level.STANDARD)
        topo = collect_tree(host)
    part = _json(verdict.inventory["topology"]["tree"])
    assert part == _json(picture_part(topo))
    assert "ports" not in part["devices"][0] and set(part["matrix"]) == {g.label for g in topo.gpus}
    assert render_svg(rebuild(part), "t") == render_svg(topo, "t")


def test_the_real_lspci_of_an_hgx_node_round_trips() -> None:
    """gpud's lspci -vvv of an 8x H100 node: the tree from bus ranges, 12 NICs, 4 NVSwitches."""
    with open_host(recording("lspci/gpud__lspci-vvv")) as host:
        topo = collect_tree(host)
    assert topo.source == "lspci -vvv"
    doc = _doc(topo)
    assert render_svg(rebuild(doc), "t") == render_svg(topo, "t")
    assert render_svg(rebuild(_json(picture_part(topo))), "t") == render_svg(topo, "t")


def test_a_document_without_numa_still_draws() -> None:
    """dolmen.topo/1 before ``numa`` was added: the CPU boxes name their node only."""
    part = _sample()
    del part["numa"]
    svg = render_svg(rebuild(part))
    ElementTree.fromstring(svg)
    assert ">CPU 0<" in svg and "0-3" not in svg


def test_a_quick_or_partial_run_carries_no_tree(tmp_path: Path) -> None:
    root = scenarios.build("h100-hgx-rails", tmp_path / "t")
    with open_host(root) as host:
        quick = validate(host, level=Level.QUICK)
        only = validate(host, level=Level.STANDARD, only=("interconnect.topology",))
    assert quick.inventory["topology"] == {"state": "not read"}
    tree = only.inventory["topology"]["tree"]
    assert tree == {"devices": [], "reason": "not read: this run loaded no infiniband facts"}
    assert only.inventory["topology"]["devices"]  # the matrix is there all the same


def _sample() -> dict[str, Any]:
    """A small part as a verdict carries it: two GPUs on one switch with a NIC."""
    dev = {"root": "pci0000:15", "chain": ["0000:15:01.0", "0000:16:00.0"], "numa_node": 0}
    return {
        "source": "sysfs",
        "nvlink_source": None,
        "numa": {"0": "0-3"},
        "devices": [
            {"label": "GPU0", "kind": "gpu", "bdf": "0000:17:00.0", "name": "NVIDIA H100", **dev},
            {"label": "GPU1", "kind": "gpu", "bdf": "0000:18:00.0", "name": "NVIDIA H100", **dev},
            {"label": "NIC0", "kind": "nic", "bdf": "0000:19:00.0", "name": "mlx5_0", **dev},
        ],
        "matrix": {"GPU0": {"GPU1": "PIX", "NIC0": "PIX"}, "GPU1": {"NIC0": "PIX"}},
        "unread": {},
    }


def _set(path: str, value: Any) -> dict[str, Any]:
    doc: dict[str, Any] = set_at(_sample(), path, value)
    return doc


@pytest.mark.parametrize(
    ("doc", "why"),
    [
        ([], "not an object"),
        (_set("devices", None), "devices: expected list, got NoneType"),
        (_set("devices.0.label", "GPU0<b>"), "devices[0].label: 'GPU0<b>' is not GPU<n>"),
        (_set("devices.0.label", 7), "devices[0].label: expected str, got int"),
        (_set("devices.1.label", "GPU0"), "a label given twice"),
        (_set("devices.0.kind", "cpu"), "devices[0].kind: 'cpu' is not one of"),
        (_set("devices.0.bdf", DELETE), "devices[0].bdf: expected str, got NoneType"),
        (_set("devices.0.chain", "0000:15:01.0"), "devices[0].chain: expected list"),
        (_set("devices.0.chain", [1]), "devices[0].chain: expected str, got int"),
        (_set("devices.0.numa_node", "0"), "devices[0].numa_node: '0' is not an integer"),
        (_set("devices.0.numa_node", True), "devices[0].numa_node: True is not an integer"),
        (_set("devices.0.name", "\ud800"), "devices[0].name: not UTF-8 text"),
        (_set("devices.0.cpus", "3-1"), "devices[0].cpus: "),
        (_set("devices.0.ports", [{"port": None}]), "devices[0].ports.port: missing"),
        (_set("numa", {"zero": "0-3"}), "numa: 'zero' is not a node number"),
        (_set("numa", {"0": "0-99999"}), "numa.0: "),
        (_set("matrix", []), "matrix: expected dict, got list"),
        (_set("matrix.GPU0", {"GPU1": "NV0"}), "matrix.GPU0.GPU1: 'NV0' is not a path"),
        (_set("matrix.GPU0", {"GPU1": "X"}), "matrix.GPU0.GPU1: 'X' is not a path"),
        (_set("matrix.GPU0", {"GPU1": 18}), "matrix.GPU0.GPU1: 18 is not a path"),
        (_set("matrix.GPU0", {"GPU9": "PIX"}), "'GPU0'-'GPU9' is not a pair of the devices"),
        (_set("matrix.GPU0", {"GPU0": "PIX"}), "'GPU0'-'GPU0' is not a pair of the devices"),
        (_set("source", "guess"), "source 'guess' or nvlink_source None unknown"),
        (_set("nvlink_source", "magic"), "nvlink_source 'magic' unknown"),
        (_set("unread", {"x": 1}), "unread.x: expected str, got int"),
    ],
)
def test_malformed_documents_are_named(doc: Any, why: str) -> None:
    with pytest.raises(ValueError, match="^.*" + _re(why)):
        rebuild(doc)


def _re(text: str) -> str:
    import re

    return re.escape(text)


def test_hostile_documents_are_bounded() -> None:
    many = _sample()
    one = many["devices"][0]
    many["devices"] = [dict(one, label=f"GPU{i}") for i in range(MAX_DEVICES + 1)]
    with pytest.raises(ValueError, match="more than any host has"):
        rebuild(many)
    cpus = _sample()
    cpus["numa"] = {str(n): "0-65535" for n in range(17)}  # 17 x 65,536 CPUs
    with pytest.raises(ValueError, match="over 1048576 CPUs"):
        rebuild(cpus)


HOSTILE = '</text><script>alert(1)</script><a href="javascript:x">&amp;\x1b]0;pwn\x07'


def test_every_text_of_a_hostile_document_is_escaped() -> None:
    """Device names, bus ids, host bridges and switch ports are someone's text: the SVG
    parses as XML with its own elements only, and each text is there as text."""
    doc = copy.deepcopy(_sample())
    doc["devices"][0]["name"] = HOSTILE
    doc["devices"][1]["bdf"] = HOSTILE
    doc["devices"][2]["root"] = HOSTILE
    doc["devices"][2]["chain"] = [HOSTILE, HOSTILE + "2"]
    svg = render_svg(rebuild(doc), title=HOSTILE)
    root = ElementTree.fromstring(svg)
    tags = {el.tag.removeprefix(SVG) for el in root.iter()}
    assert tags <= {"svg", "title", "rect", "line", "path", "text"}
    assert "<script" not in svg and "\x1b" not in svg and "\x07" not in svg
    texts = [el.text or "" for el in root.iter(f"{SVG}text")]
    shown = "</text><script>alert(1)</script>"
    assert any(t.startswith(shown[:18]) for t in texts)  # a name, cut to the box's 18
    assert any(shown in t and "\\x1b]0;pwn\\x07" in t for t in texts)  # the bus id, whole
    assert root.get("aria-label", "").startswith("</text><script>")
    assert root.find(f"{SVG}title") is not None
