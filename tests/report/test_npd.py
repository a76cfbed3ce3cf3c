"""The node-problem-detector contract: the shipped monitor ConfigMap loads, passes the
official Kubernetes schema, names a problem condition (True = problem, NPD's convention),
and runs a dolmen invocation whose exit codes and output obey the plugin protocol."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from dolmen import demo
from dolmen.cli.lean import parse
from dolmen.cli.main import main

kubernetes_validate = pytest.importorskip("kubernetes_validate")

MONITOR = Path(__file__).resolve().parents[2] / "docs/node-problem-detector/dolmen-monitor.yaml"


def _configmap() -> dict[str, Any]:
    doc = yaml.safe_load(MONITOR.read_text())
    assert isinstance(doc, dict)
    return doc


def _monitor() -> dict[str, Any]:
    data = json.loads(_configmap()["data"]["dolmen-monitor.json"])
    assert isinstance(data, dict)
    return data


def test_configmap_passes_the_official_schema() -> None:
    kubernetes_validate.validate(_configmap(), "1.33.0", strict=True)


def test_condition_is_named_for_the_problem() -> None:
    """A condition is True while the problem is present; the old GPUNodeHealthy was set True
    by NPD on a broken node (issue 17)."""
    m = _monitor()
    assert m["plugin"] == "custom"
    [cond] = m["conditions"]
    assert cond["type"] == "GPUProblem" and "Healthy" not in cond["type"]
    assert all(rule["condition"] == cond["type"] for rule in m["rules"])
    assert m["pluginConfig"]["max_output_length"] == 80


def test_rule_runs_the_quick_npd_mode() -> None:
    [rule] = _monitor()["rules"]
    assert rule["path"].endswith("/dolmen") and rule["type"] == "permanent"
    args = parse(rule["args"])
    assert args is not None and args["npd"] and args["level"] == "quick"


@pytest.mark.parametrize(("sample", "code"), [("hgx-h100", 0), ("hgx-h100-xid79", 1)])
def test_plugin_protocol(
    sample: str, code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 0 OK / 1 NonOK, one line of at most max_output_length characters on stdout."""
    [rule] = _monitor()["rules"]
    tree = demo.build_sample(sample, tmp_path / sample)
    assert main([*rule["args"], "--from", str(tree)]) == code
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and len(out.rstrip("\n")) <= 80
    if code:
        assert "gpu" in out
