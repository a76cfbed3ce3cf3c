"""The verdict's inventory (checks/inventory.py): built from the facts the run loaded, never
collecting more; what was not loaded says "not read", what failed says why."""

from __future__ import annotations

import json
from pathlib import Path

from dolmen.checks.inventory import NOT_READ, inventory
from dolmen.checks.model import Level
from dolmen.checks.suite import validate
from dolmen.facts import FactError, FactStore
from dolmen.host import open_host
from dolmen.host.tree import TreeHost
from dolmen.report.json import verdict_document
from tests.conftest import make_tree, recording

XML = "nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml"


def test_nothing_loaded_is_not_read_and_nothing_is_collected(tmp_path: Path) -> None:
    with open_host(make_tree(tmp_path)) as host:
        store = FactStore(host)
        inv = inventory(store)
        assert store.done("gpu") is None and store.done("os") is None  # nothing collected
    assert inv == {k: {"state": NOT_READ} for k in ("host", "gpus", "ib", "nics", "topology")}


def test_a_failed_collector_is_unreadable_with_its_reason(tmp_path: Path) -> None:
    with open_host(make_tree(tmp_path)) as host:
        store = FactStore(host)
        store._done["infiniband"] = FactError("infiniband", "ibstat hung", bug=False)
        assert inventory(store)["ib"] == {"state": "unreadable", "reason": "ibstat hung"}


def test_an_xml_alone_lists_its_gpus_and_says_what_is_absent(tmp_path: Path) -> None:
    root = make_tree(tmp_path, commands={"nvidia-smi -q -x": recording(XML).read_text()})
    with open_host(root) as host:
        v = validate(host, level=Level.QUICK)
    gpus = v.inventory["gpus"]
    assert gpus["state"] == "read" and gpus["count"] == len(gpus["devices"]) > 0
    first = gpus["devices"][0]
    assert first["index"] == 0 and first["bus_id"] and first["model"] and first["uuid"]
    assert gpus["driver"] and gpus["cuda"]
    # a bundle without an IB tree: no port, and why, never a bare zero
    ib = v.inventory["ib"]
    assert ib["state"] != "read" or (ib["count"] == 0 and ib["reason"])
    doc = verdict_document(v)
    assert doc["inventory"] == json.loads(json.dumps(v.inventory))  # plain JSON values


def _topo_m() -> str:
    """A real ``nvidia-smi topo -m`` of an 8x H100 node (nccl issue 1453, cut off)."""
    import re

    text = recording("nvidia-smi-topo/issues__topo-m-excerpts.md").read_text()
    blocks = dict(re.findall(r"^## (https://\S+).*?```\n(.*?)```", text, re.S | re.M))
    return next(b for url, b in blocks.items() if "nccl/issues/1453" in url)


def test_the_tree_says_why_it_is_not_drawn(tmp_path: Path) -> None:
    """The matrix read, the tree not: a bundle of nvidia-smi outputs alone has no PCI tree;
    a run whose pci facts failed says so; neither ever stops the verdict."""
    commands = {"nvidia-smi -q -x": recording(XML).read_text(), "nvidia-smi topo -m": _topo_m()}
    with open_host(make_tree(tmp_path / "a", commands=commands)) as host:
        v = validate(host, level=Level.STANDARD)
    topo = v.inventory["topology"]
    assert topo["state"] == "read" and len(topo["devices"]) == 17
    assert topo["tree"]["devices"] == [] and topo["tree"]["reason"].startswith("no PCI tree: ")
    with open_host(make_tree(tmp_path / "b", commands=commands)) as host:
        store = FactStore(host)
        for name in ("gpu", "infiniband", "numa", "topology"):
            store.get(name)
        store._done["pci"] = FactError("pci", "sysfs unreadable", bug=False)
        tree = inventory(store)["topology"]["tree"]
    assert tree == {"devices": [], "reason": "unreadable: pci facts: sysfs unreadable"}


def test_a_bug_in_the_tree_costs_the_picture_not_the_verdict(tmp_path: Path) -> None:
    """A host whose link targets raise once the run's facts are in (a bug, not a missing
    file): the inventory still comes out, its tree says what happened."""
    from tests.hosts import scenarios

    class Broken(TreeHost):
        def readlink(self, rel: str) -> str | None:
            raise RuntimeError(f"readlink {rel}")

    root = scenarios.build("h100-hgx-rails", tmp_path / "rails")
    store = FactStore(TreeHost(root))
    store.collect(("os", "gpu", "pci", "infiniband", "numa", "topology"))
    store.host = Broken(root)
    inv = inventory(store)
    tree = inv["topology"]["tree"]
    assert tree["devices"] == [] and tree["reason"].startswith("error: RuntimeError: readlink")
    assert len(inv["topology"]["devices"]) == 17 and inv["gpus"]["count"] == 8


def test_gpus_seen_by_a_pasted_log_or_nvlink_listing(tmp_path: Path) -> None:
    """What gpu.present counts, the inventory counts: the GPUs a boot log's nvidia-drm lines
    name, and those an nvlink -s lists by position (no bus id)."""
    pastes = {
        "dmesg": "kernel-logs/gpud__dmesg.decode.iso.log.1",
        "nvidia-smi nvlink -s": "nvidia-smi-nvlink/gpud__nvidia-smi.nvlink.status.a100",
    }
    for i, (key, rel) in enumerate(pastes.items()):
        root = make_tree(tmp_path / str(i), commands={key: recording(rel).read_text()})
        with open_host(root) as host:
            gpus = validate(host, level=Level.STANDARD).inventory["gpus"]
        assert (gpus["count"], gpus["seen"]) == (0, 8), rel
