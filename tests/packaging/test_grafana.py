"""packaging/grafana/dolmen.json, checked in Python as Grafana would load it: the panels fit
the 24-column grid without overlapping, every query reads its data source from the
``$datasource`` variable, names only metrics dolmen or dcgm-exporter write and labels they
carry, uses only variables the dashboard defines, and every series dolmen writes is shown.

No Grafana server runs here (none is packaged for Debian, PyPI or npm); the optional
type check against npm's @grafana/schema runs when node and that package are present."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.packaging.common import PACKAGING
from tests.packaging.metrics import DCGM_LABELS, DOLMEN_LABELS, dolmen_written, known, names_in

DASHBOARD = PACKAGING / "grafana/dolmen.json"
PANEL_TYPES = {"row", "stat", "table", "timeseries", "bargauge"}
LABELS = DCGM_LABELS | DOLMEN_LABELS | {"instance", "job", "alertname", "alertstate"}


def _dash() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return doc


def _panels() -> list[dict[str, Any]]:
    return [p for p in _dash()["panels"] if p["type"] != "row"]


def _exprs() -> list[str]:
    return [t["expr"] for p in _panels() for t in p["targets"]]


def test_top_level_shape() -> None:
    d = _dash()
    assert d["uid"] == "dolmen-node-health" and d["title"]
    assert isinstance(d["schemaVersion"], int) and d["schemaVersion"] >= 36
    assert d["time"] == {"from": "now-6h", "to": "now"}


def test_panels_fit_the_grid_and_do_not_overlap() -> None:
    cells: dict[tuple[int, int], int] = {}
    ids = [p["id"] for p in _dash()["panels"]]
    assert len(ids) == len(set(ids))
    for p in _dash()["panels"]:
        assert p["type"] in PANEL_TYPES, p["type"]
        g = p["gridPos"]
        assert g["x"] >= 0 and g["w"] > 0 and g["h"] > 0 and g["x"] + g["w"] <= 24, p["title"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, (p["title"], cells.get((x, y)))
                cells[(x, y)] = p["id"]


def test_data_source_is_the_template_variable() -> None:
    [var] = [v for v in _dash()["templating"]["list"] if v["type"] == "datasource"]
    assert var["name"] == "datasource" and var["query"] == "prometheus"
    ref = {"type": "prometheus", "uid": "${datasource}"}
    for p in _panels():
        assert p["datasource"] == ref, p["title"]
        assert p["targets"], p["title"]
        assert [t["refId"] for t in p["targets"]] == [chr(65 + i) for i in range(len(p["targets"]))]
        for t in p["targets"]:
            assert t["datasource"] == ref, p["title"]
    for v in _dash()["templating"]["list"]:
        if v["type"] == "query":
            assert v["datasource"] == ref


def test_queries_name_existing_metrics_and_labels(tmp_path: Path) -> None:
    have = known(tmp_path)
    for expr in _exprs():
        used = names_in(expr)
        assert used and used <= have, (expr, used - have)
        for label in re.findall(r"[{,]\s*(\w+)\s*(?:=~|!=|!~|=)", expr):
            assert label in LABELS, (expr, label)
        for label in re.findall(r"by \(([^)]*)\)", expr):
            assert {s.strip() for s in label.split(",")} <= LABELS, expr


def test_variables_used_are_defined() -> None:
    defined = {v["name"] for v in _dash()["templating"]["list"]}
    text = DASHBOARD.read_text()
    used = set(re.findall(r"\$\{?(\w+)", text))
    assert used <= defined, used - defined
    for v in _dash()["templating"]["list"]:
        if v["type"] == "query":
            assert names_in(v["query"]["query"]), v["name"]


def test_every_series_dolmen_writes_is_on_the_dashboard(tmp_path: Path) -> None:
    shown = set().union(*(names_in(e) for e in _exprs()))
    assert dolmen_written(tmp_path) <= shown, dolmen_written(tmp_path) - shown
    assert "dolmen_agent_verdict_age_seconds" in shown
    for field in (
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    ):
        assert field in shown


NODE = shutil.which("node")
SCHEMA_DIR = os.environ.get(
    "DOLMEN_GRAFANA_SCHEMA_DIR"
)  # a folder with node_modules/@grafana/schema


needs_schema = pytest.mark.skipif(
    NODE is None
    or not SCHEMA_DIR
    or not (Path(SCHEMA_DIR) / "node_modules/@grafana/schema").is_dir(),
    reason="optional: set DOLMEN_GRAFANA_SCHEMA_DIR to a folder where "
    "`npm install @grafana/schema typescript` ran (docs/deploy.md)",
)


def _tsc(text: str) -> list[str]:
    """tsc's errors for the dashboard ``text`` as a @grafana/schema Dashboard, less the
    enum literals that are one of their enum's values."""
    assert SCHEMA_DIR is not None
    ts = Path(SCHEMA_DIR) / ".check_dolmen_dashboard.ts"
    ts.write_text(
        "import type { Dashboard } from '@grafana/schema';\n"
        f"export const d = {text.strip()} satisfies Dashboard;\n"
    )
    try:
        done = subprocess.run(
            ["npx", "tsc", "--noEmit", "--strict", "--moduleResolution", "bundler", "--module",
             "esnext", "--target", "es2022", "--skipLibCheck", str(ts)],
            cwd=SCHEMA_DIR, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        ts.unlink()
    errors = [line for line in done.stdout.splitlines() if "error TS" in line]
    assert done.returncode == 0 or errors, done.stdout + done.stderr  # tsc itself ran
    enums = _enums(Path(SCHEMA_DIR))
    return [e for e in errors if not _enum_literal(e, enums)]


@needs_schema
def test_type_checks_against_grafana_schema() -> None:
    assert _tsc(DASHBOARD.read_text()) == []


@needs_schema
def test_type_check_would_catch_a_wrong_word() -> None:
    bad = DASHBOARD.read_text().replace('"absolute"', '"absolut"', 1)
    assert any("ThresholdsMode" in e for e in _tsc(bad))


ENUM_ERROR = re.compile(r"Type '\"([^\"]*)\"' is not assignable to type '(\w+)'")


def _enums(folder: Path) -> dict[str, set[str]]:
    """Every string enum of @grafana/schema's declarations: name -> its values."""
    out: dict[str, set[str]] = {}
    for dts in (folder / "node_modules/@grafana/schema/dist").rglob("*.d.ts"):
        for name, body in re.findall(r"export declare enum (\w+) \{([^}]*)\}", dts.read_text()):
            out.setdefault(name, set()).update(re.findall(r'= "([^"]*)"', body))
    return out


def _enum_literal(error: str, enums: dict[str, set[str]]) -> bool:
    """A JSON string where the schema has a TypeScript enum: TypeScript never takes a literal
    for an enum, but Grafana reads the JSON value. Accepted only when the literal is one of
    that enum's values (``"absolute"`` for ThresholdsMode), so a wrong word still fails."""
    m = ENUM_ERROR.search(error)
    return m is not None and m.group(1) in enums.get(m.group(2), set())
