"""NUMA facts: nodes, CPU-less nodes, distances, per-node huge pages; trees and live."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.facts import numa, to_jsonable
from dolmen.facts.reading import parse_cpulist
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording
from tests.facts.trees import extract_ttar


@pytest.mark.parametrize(
    ("text", "expected"),
    [("10 21\n", (10, 21)), ("10", (10,)), ("", None), ("10 x", None), ("-1 10", None)],
)
def test_parse_distances(text: str, expected: tuple[int, ...] | None) -> None:
    assert numa.parse_distances(text) == expected


@pytest.fixture(scope="module")
def node_exporter_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    archive = recording("sysfs/node_exporter__sys.ttar")
    return extract_ttar(archive, tmp_path_factory.mktemp("ne"), only=("sys/devices/system",))


def test_collect_recorded_nodes(node_exporter_tree: Path) -> None:
    facts = numa.collect(TreeHost(node_exporter_tree))
    assert [n.id for n in facts.nodes] == [0, 1, 2]
    assert [n.cpus for n in facts.nodes] == [(0, 1), (2, 3), ()]  # node2: memory only
    assert facts.nodes[0].mem_total_bytes == 134182340 * 1024
    assert facts.nodes[1].mem_free_bytes == 39634788 * 1024
    assert facts.node_of_cpu(3) == 1 and facts.node_of_cpu(7) is None
    # The recording has no distance files and no node/online: said, not guessed.
    assert facts.nodes[0].distances is None and facts.unread["node0.distances"] == "missing"
    assert facts.online is None and facts.unread["online"] == "missing"


def test_collect_tree_with_distances_and_hugepages(tmp_path: Path) -> None:
    base = "sys/devices/system/node"
    files = {f"{base}/online": "0-1\n"}
    for n, cpus in ((0, "0-3"), (1, "4-7")):
        files[f"{base}/node{n}/cpulist"] = f"{cpus}\n"
        files[f"{base}/node{n}/distance"] = "10 21\n" if n == 0 else "21 10\n"
        files[f"{base}/node{n}/meminfo"] = (
            f"Node {n} MemTotal:       1000 kB\nNode {n} MemFree:         600 kB\n"
        )
        hp = f"{base}/node{n}/hugepages/hugepages-2048kB"
        files[f"{hp}/nr_hugepages"] = "512\n"
        files[f"{hp}/free_hugepages"] = "500\n"
        files[f"{hp}/surplus_hugepages"] = "0\n"
    files[f"{base}/node1/cpulist"] = "4-x\n"
    facts = numa.collect(TreeHost(make_tree(tmp_path, files=files)))
    assert facts.online == (0, 1)
    assert [n.distances for n in facts.nodes] == [(10, 21), (21, 10)]
    assert facts.nodes[0].hugepages[0].total == 512 and facts.nodes[0].hugepages[0].free == 500
    assert facts.nodes[0].mem_total_bytes == 1000 * 1024
    assert facts.nodes[1].cpus is None and facts.unread["node1.cpus"].startswith("malformed")
    assert "node0.hugepages.2048kB.reserved" not in facts.unread  # nodes have no resv file


def test_collect_without_numa(tmp_path: Path) -> None:
    facts = numa.collect(
        TreeHost(make_tree(tmp_path, files={"sys/devices/system/cpu/online": "0"}))
    )
    assert facts.nodes == () and facts.unread["nodes"].startswith("not supported")
    facts = numa.collect(TreeHost(make_tree(tmp_path / "sysfs", files={"sys/class/x": ""})))
    assert facts.unread["nodes"].startswith("missing")
    # A tree without sys/ did not capture sysfs: that says nothing of NUMA (issue 8).
    facts = numa.collect(TreeHost(make_tree(tmp_path / "empty")))
    assert facts.unread["nodes"] == "not in this bundle: sys/devices/system/node"


def test_live_smoke() -> None:
    facts = numa.collect(LiveHost())
    assert json.loads(json.dumps(to_jsonable(facts)))  # dolmen facts --json
    assert len(facts.nodes) >= 1
    cpus = {c for n in facts.nodes for c in (n.cpus or ())}
    online = parse_cpulist(Path("/sys/devices/system/cpu/online").read_text())
    assert online and set(online) <= cpus  # every online CPU sits on a node
    assert all(n.mem_total_bytes and n.mem_total_bytes > 0 for n in facts.nodes if n.cpus)
