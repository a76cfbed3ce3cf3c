"""packaging/kubernetes/dolmen-prometheusrule.yaml: the alert rules as a PrometheusRule of
the Prometheus operator, generated from packaging/prometheus/dolmen-rules.yml (not stale,
the same groups), valid against the operator's own CRD schema (prometheus-operator v0.93.0,
vendored in tests/packaging/data with its provenance) made strict, and its spec accepted by
``promtool check rules`` as the rule file the operator writes from it."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.crd import crd_schema
from tests.packaging import promrule

CRD = Path(__file__).parent / "data" / "monitoring.coreos.com_prometheusrules.v0.93.0.yaml.gz"
PROMTOOL = shutil.which("promtool")


@cache
def schema() -> dict[str, Any]:
    return crd_schema(CRD, "v1")


def _shipped() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(promrule.SHIPPED.read_text())
    return doc


def test_the_shipped_object_is_generated_from_the_rule_file() -> None:
    assert promrule.SHIPPED.read_text() == promrule.render(promrule.RULES.read_text()), (
        "packaging/kubernetes/dolmen-prometheusrule.yaml is stale: python -m "
        "tests.packaging.promrule > packaging/kubernetes/dolmen-prometheusrule.yaml"
    )
    rules = yaml.safe_load(promrule.RULES.read_text())
    assert _shipped()["spec"] == {"groups": rules["groups"]}


def test_it_passes_the_operators_crd_schema() -> None:
    obj = _shipped()
    assert (obj["apiVersion"], obj["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    jsonschema.validate(obj, schema())
    alerts = [r["alert"] for g in obj["spec"]["groups"] for r in g["rules"]]
    assert "DolmenNodeUnhealthy" in alerts and "GpuXidCritical" in alerts


def test_the_strict_schema_bites() -> None:
    obj = _shipped()
    obj["spec"]["groups"][0]["rules"][0]["for"] = "2 minutes"  # not a Prometheus duration
    with pytest.raises(jsonschema.ValidationError, match="2 minutes"):
        jsonschema.validate(obj, schema())
    obj = _shipped()
    obj["spec"]["groups"][0]["rules"][0]["annotation"] = {"summary": "x"}  # a typo
    with pytest.raises(jsonschema.ValidationError, match="annotation"):
        jsonschema.validate(obj, schema())
    obj = _shipped()
    del obj["spec"]["groups"][0]["name"]
    with pytest.raises(jsonschema.ValidationError, match="name"):
        jsonschema.validate(obj, schema())


@pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian: prometheus)")
def test_promtool_accepts_its_spec_as_a_rule_file(tmp_path: Path) -> None:
    out = tmp_path / "from-crd.yml"
    out.write_text(yaml.safe_dump(_shipped()["spec"]))
    assert PROMTOOL is not None
    done = subprocess.run(
        [PROMTOOL, "check", "rules", str(out)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
