"""``dolmen fleet report``: nodes x failing checks, outliers against the fleet's majority
from what the verdicts carry, and what changed since the last report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dolmen.cli.main import main
from dolmen.fleet.figures import node_figures, outliers
from dolmen.fleet.report import changes
from tests.fleet.conftest import as_node, write
from tests.report.contract import assert_valid


def _doc(**inv: Any) -> dict[str, Any]:
    return {"inventory": inv, "findings": []}


def _gemm(*tflops: float) -> dict[str, Any]:
    return {
        "inventory": {},
        "findings": [
            {"check": "workload.gemm", "subject": f"gpu:{i}", "evidence": {"bf16": {"tflops": t}}}
            for i, t in enumerate(tflops)
        ],
    }


def test_figures_are_read_from_what_the_verdict_carries(verdict_texts: dict[str, str]) -> None:
    figs = node_figures(json.loads(verdict_texts["healthy"]))
    assert figs["driver"] == "580.105.08" and figs["gpu_model"] == "NVIDIA H100 80GB HBM3"
    assert figs["nccl"] == "2.27.7" and figs["gpu_count"] == "8"
    assert "ib_rates" not in figs  # no port read: not known, never "none"


@pytest.mark.parametrize(
    ("docs", "expect"),
    [
        # one driver differs from a 2-of-3 majority
        (
            {n: _doc(gpus={"driver": d}) for n, d in (("a", "580"), ("b", "580"), ("c", "575"))},
            [("driver", "c", "575", "580")],
        ),
        # the IB rate of one node is half its peers'
        (
            {
                "a": _doc(ib={"rates": {"400 Gb/s": 8}}),
                "b": _doc(ib={"rates": {"400 Gb/s": 8}}),
                "c": _doc(ib={"rates": {"200 Gb/s": 1, "400 Gb/s": 7}}),
            },
            [("ib_rates", "c", "200 Gb/s x1, 400 Gb/s x7", "400 Gb/s x8")],
        ),
        # no strict majority: every node is named, none is "the" odd one
        (
            {"a": _doc(gpus={"driver": "580"}), "b": _doc(gpus={"driver": "575"})},
            [("driver", "a", "580", "no majority"), ("driver", "b", "575", "no majority")],
        ),
        # GEMM: the median of a node's GPUs against the fleet median, 10 % below is slow
        (
            {"a": _gemm(700, 710), "b": _gemm(705, 700), "c": _gemm(600, 610), "d": _gemm(690)},
            [("gemm_bf16_tflops", "c", "605", "696.25")],
        ),
        # all alike: nothing
        ({n: _doc(gpus={"driver": "580"}) for n in "abc"}, []),
    ],
)
def test_outliers_against_the_majority(
    docs: dict[str, dict[str, Any]], expect: list[tuple[str, ...]]
) -> None:
    found, _ = outliers({n: node_figures(d) for n, d in docs.items()})
    assert [(o.figure, o.node, o.value, o.expected) for o in found] == expect


def test_a_node_that_does_not_carry_a_figure_is_not_known_not_an_outlier() -> None:
    docs = {
        "a": _doc(gpus={"driver": "580"}),
        "b": _doc(gpus={"driver": "580"}),
        "c": _doc(gpus={"state": "unreadable"}),
    }
    found, unknown = outliers({n: node_figures(d) for n, d in docs.items()})
    assert found == [] and unknown == {"driver": ["c"]}


def test_changes_since_the_previous_report() -> None:
    before = {
        "generated": "t0",
        "nodes": {
            "a": {"status": "healthy", "failing": [], "figures": {"driver": "575"}},
            "gone": {"status": "healthy", "failing": [], "figures": {}},
        },
    }
    rows = [
        {"node": "a", "status": "unhealthy", "failing": ["gpu.xid"], "figures": {"driver": "580"}},
        {"node": "new", "status": "healthy", "failing": [], "figures": {}},
    ]
    assert [(c["node"], c["what"], c["before"], c["after"]) for c in changes(before, rows)] == [
        ("a", "status", "healthy", "unhealthy"),
        ("a", "now failing", None, "gpu.xid"),
        ("a", "driver", "575", "580"),
        ("gone", "no longer in the store", "healthy", None),
        ("new", "new node", None, "healthy"),
    ]
    assert changes(None, rows) == []


def _store(tmp_path: Path, verdict_texts: dict[str, str], **nodes: str) -> Path:
    src = tmp_path / "in"
    for node, text in nodes.items():
        write(src, f"{node}.json", text)
    fleet = tmp_path / "fleet"
    assert main(["fleet", "collect", str(src), "-o", str(fleet)]) == 0
    return fleet


def test_report_table_outliers_and_changes_end_to_end(
    tmp_path: Path, verdict_texts: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    h, x = verdict_texts["healthy"], verdict_texts["xid79"]
    fleet = _store(
        tmp_path,
        verdict_texts,
        n1=as_node(h, "n1"),
        n2=as_node(x, "n2"),
        n3=as_node(h, "n3", gpus__driver="575.57.08"),
    )
    capsys.readouterr()
    assert main(["fleet", "report", str(fleet)]) == 1  # a node is unhealthy
    out, _ = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0] == "fleet: 3 nodes: 2 healthy, 0 degraded, 1 unhealthy, 0 undecided"
    row = next(line for line in lines if line.startswith("n2 "))
    assert "unhealthy" in row and "FAIL" in row
    assert any("gpu.xid" in line for line in lines if line.startswith("["))
    assert "  n3: driver 575.57.08, where 2 of 3 nodes have 580.105.08" in lines
    assert "changes: first report of this store" in lines
    # the next collection: n2 repaired; the report says what changed
    write(tmp_path / "in2", "n2.json", as_node(h, "n2"))
    assert main(["fleet", "collect", str(tmp_path / "in2"), "-o", str(fleet)]) == 0
    capsys.readouterr()
    assert main(["fleet", "report", str(fleet), "--json"]) == 0
    doc = assert_valid(json.loads(capsys.readouterr().out))
    assert doc["summary"]["healthy"] == 3 and doc["columns"] == []
    what = {(c["node"], c["what"]) for c in doc["changes"]}
    assert ("n2", "status") in what and ("n2", "no longer failing") in what
    assert doc["since"] is not None
    assert [o["node"] for o in doc["outliers"]] == ["n3"]


def test_report_json_holds_its_schema_with_failures(
    tmp_path: Path, verdict_texts: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = _store(
        tmp_path,
        verdict_texts,
        a=as_node(verdict_texts["remap"], "a"),
        b=as_node(verdict_texts["xid79"], "b"),
    )
    capsys.readouterr()
    assert main(["fleet", "report", str(fleet), "--json"]) == 1
    doc = assert_valid(json.loads(capsys.readouterr().out))
    a = next(r for r in doc["nodes"] if r["node"] == "a")
    assert a["failing"] and set(a["failing"]) | {"gpu.xid"} <= set(doc["columns"])
    b = next(r for r in doc["nodes"] if r["node"] == "b")
    assert "gpu.xid" in b["failing"] and b["checks"]["gpu.xid"] == "fail"


def test_report_without_a_store_says_how_to_make_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fleet", "report", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert "no fleet store there" in err and "fleet collect" in err
