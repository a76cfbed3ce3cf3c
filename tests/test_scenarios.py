"""Every committed scenario (tests/hosts): its [expect] table holds and its verdict matches the
golden ``expected.json``. ``pytest --update-golden`` rewrites the goldens after a deliberate
change; review the diff before committing it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dolmen.checks.model import Level
from dolmen.checks.suite import validate
from dolmen.host import open_host
from dolmen.report.json import verdict_document
from tests.hosts import scenarios

VOLATILE = ("started", "duration_s", "dolmen_version")


def normalise(doc: dict[str, Any], root: Path) -> dict[str, Any]:
    """The verdict without what changes from run to run (times, the temporary root)."""
    text = json.dumps(doc).replace(str(root), "<root>")
    out = json.loads(text)
    for key in VOLATILE:
        out.pop(key, None)
    out["source"] = {k: v for k, v in out["source"].items() if k != "root"}
    for f in out["findings"]:
        f["evidence"].pop("traceback", None)
    out["findings"].sort(key=lambda f: (f["check"], f["subject"], f["summary"]))
    return out


@pytest.mark.parametrize("name", scenarios.names())
def test_scenario(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    spec = scenarios.spec(name)
    root = scenarios.build(name, tmp_path / name)
    with open_host(root) as host:
        verdict = validate(host, level=Level.STANDARD, config=scenarios.config(name))
    doc = normalise(verdict_document(verdict), root)
    expect = spec.get("expect", {})
    by_check: dict[str, set[str]] = {}
    for f in doc["findings"]:
        by_check.setdefault(f["check"], set()).add(f["status"])
    assert doc["status"] == expect["status"], [
        (f["check"], f["subject"], f["summary"])
        for f in doc["findings"]
        if f["status"] in ("fail", "unknown", "error", "warn")
    ]
    for status in ("fail", "warn", "unknown"):
        for check_id in expect.get(status, []):
            assert status in by_check.get(check_id, set()), (check_id, by_check.get(check_id))
    assert "error" not in {f["status"] for f in doc["findings"]}
    golden = scenarios.HOSTS / name / "expected.json"
    if request.config.getoption("--update-golden"):
        golden.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    if not golden.exists():
        pytest.fail(f"no golden for {name}: run pytest --update-golden and review the diff")
    assert doc == json.loads(golden.read_text())
