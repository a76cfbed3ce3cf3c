"""The ``dcgmi diag -j`` parser on both layouts (DCGM 3.3/4 and DCGM 2/early 3), and on
truncated, junk and hostile JSON. No real diag JSON with a usable licence exists in
../shared/recordings (PROVENANCE.md, gaps): these documents follow DCGM's own schema
(testing/python3/dcgm_diag_schema.json) and the NVVS field names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.facts.dcgm import DcgmFacts, collect, parse_dcgm_diag
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree


def _r(eid: int, status: str, *warnings: tuple[str, int]) -> dict[str, object]:
    res: dict[str, object] = {
        "entity_group": "GPU",
        "entity_group_id": 1,
        "entity_id": eid,
        "status": status,
    }
    if warnings:
        res["warnings"] = [
            {"error_category": 1, "error_id": i, "error_severity": 2, "warning": w}
            for w, i in warnings
        ]
    return res


NEW = {
    "DCGM Diagnostic": {
        "test_categories": [
            {
                "category": "Deployment",
                "tests": [
                    {"name": "Denylist", "results": [_r(0, "Pass"), _r(1, "Pass")],
                     "test_summary": {"status": "Pass"}},
                ],
            },
            {
                "category": "Hardware",
                "tests": [
                    {"name": "Memory",
                     "results": [_r(0, "Pass"), _r(1, "Fail", ("GPU 1 DBE", 43))],
                     "test_summary": {"status": "Fail"}},
                ],
            },
        ]
    },
    "entity_groups": [
        {"entity_group": "GPU", "entity_group_id": 1,
         "entities": [{"entity_id": 0, "device_id": "2330", "serial_num": "S0"},
                      {"entity_id": 1, "device_id": "2330", "serial_num": "S1"}]},
    ],
    "metadata": {"version": "4.2.3", "Driver Version Detected": "570.124.06"},
}  # fmt: skip

OLD = {
    "DCGM GPU Diagnostic": {
        "test_categories": [
            {
                "category": "Deployment",
                "tests": [{"name": "Blacklist", "results": [{"gpu_ids": "0,1,2,3", "status": "PASS"}]}],
            },
            {
                "category": "Integration",
                "tests": [
                    {"name": "PCIe", "results": [
                        {"gpu_ids": "2", "status": "Warn", "warnings": ["GPU 2 PCIe replay rate high"]},
                        {"gpu_id": 3, "status": "Skip"},
                    ]},
                ],
            },
        ],
        "version": "2.4.6",
    }
}  # fmt: skip


def test_new_layout() -> None:
    facts = parse_dcgm_diag(json.dumps(NEW))
    assert facts.version == "4.2.3" and facts.driver_version == "570.124.06"
    assert dict(facts.serials) == {0: "S0", 1: "S1"} and not facts.unread
    failed = [r for r in facts.results if r.status == "fail"]
    assert [(r.test, r.gpu, r.messages, r.error_ids) for r in failed] == [
        ("Memory", 1, ("GPU 1 DBE",), (43,))
    ]
    assert len(facts.results) == 4


def test_old_layout() -> None:
    facts = parse_dcgm_diag(json.dumps(OLD))
    assert facts.version == "2.4.6" and not facts.unread
    by = {(r.test, r.gpu): r.status for r in facts.results}
    assert by == {
        ("Blacklist", 0): "pass",
        ("Blacklist", 1): "pass",
        ("Blacklist", 2): "pass",
        ("Blacklist", 3): "pass",
        ("PCIe", 2): "warn",
        ("PCIe", 3): "skip",
    }
    warn = next(r for r in facts.results if r.status == "warn")
    assert warn.messages == ("GPU 2 PCIe replay rate high",)


def test_runtime_error_and_prompt_before_json() -> None:
    text = "$ dcgmi diag -r 1 -j\n" + json.dumps(
        {"DCGM Diagnostic": {"runtime_error": "Unable to connect to host engine"}}
    )
    facts = parse_dcgm_diag(text)
    assert facts.runtime_error == "Unable to connect to host engine" and not facts.unread


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (json.dumps(NEW)[:300], "malformed: not complete JSON"),
        ("", "malformed: not complete JSON"),
        ("[1, 2]", "malformed: not a JSON object"),
        ('{"other": {}}', "malformed: no 'DCGM Diagnostic' object"),
        ('{"DCGM Diagnostic": {"test_categories": "x"}}', "malformed: no test results"),
        ('{"DCGM Diagnostic": {"test_categories": [1, {"tests": [null, {"results": 3}]}]}}',
         "malformed: no test results"),
    ],
)  # fmt: skip
def test_malformed(text: str, why: str) -> None:
    facts = parse_dcgm_diag(text)
    assert facts.unread["diag"].startswith(why) and facts.results == ()


def test_hostile_values_are_not_trusted() -> None:
    doc = {"DCGM Diagnostic": {"test_categories": [{"category": 7, "tests": [
        {"name": ["x"], "results": [
            {"entity_group": "GPU", "entity_id": "0", "status": None,
             "warnings": [{"warning": 5, "error_id": "43"}, 9]},
            {"gpu_ids": "a,b", "status": "FAIL"},
        ]}]}]}}  # fmt: skip
    facts = parse_dcgm_diag(json.dumps(doc))
    first, second = facts.results
    assert (first.category, first.test, first.gpu, first.status) == ("?", "?", None, "unknown")
    assert first.messages == () and first.error_ids == ()
    assert (second.gpu, second.status) == (None, "fail")


def test_collect_from_a_tree(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t", commands={"dcgmi diag -j": (json.dumps(NEW), 226)})
    facts = collect(TreeHost(root))
    assert isinstance(facts, DcgmFacts) and len(facts.results) == 4  # exit 226: still read
    empty = collect(TreeHost(make_tree(tmp_path / "e", files={"etc/hostname": "n\n"})))
    assert empty.unread["diag"] == "not in this bundle: dcgmi diag -j"
