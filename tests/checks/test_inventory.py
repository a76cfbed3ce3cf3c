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
