"""packaging/prometheus/dolmen-rules.yml: promtool checks it and runs its unit tests
(dolmen-rules.test.yml, shipped beside it); every metric it names exists; the critical Xids
are those of dolmen's knowledge base; the staleness alert agrees with the timer."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from dolmen.compat import tomllib
from dolmen.values.duration import parse_duration
from tests.packaging.common import PACKAGING, REPO
from tests.packaging.metrics import known, names_in
from tests.packaging.units import load_unit, one

RULES = PACKAGING / "prometheus/dolmen-rules.yml"
RULE_TESTS = PACKAGING / "prometheus/dolmen-rules.test.yml"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool is not installed (Debian: prometheus)"
)


def _rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULES.read_text())
    return [r for g in doc["groups"] for r in g["rules"]]


def _by_name() -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for r in _rules()}


@needs_promtool
def test_promtool_checks_the_rules() -> None:
    assert PROMTOOL is not None
    done = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True)
    assert done.returncode == 0 and "SUCCESS" in done.stdout, done.stdout + done.stderr


@needs_promtool
def test_promtool_runs_the_shipped_rule_tests() -> None:
    assert PROMTOOL is not None
    done = subprocess.run(
        [PROMTOOL, "test", "rules", str(RULE_TESTS)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "SUCCESS" in done.stdout, done.stdout + done.stderr


@needs_promtool
def test_promtool_would_catch_a_wrong_expectation(tmp_path: Path) -> None:
    """The negative control: a test expecting the unhealthy alert a minute early fails."""
    assert PROMTOOL is not None
    shutil.copy(RULES, tmp_path / RULES.name)
    bad = RULE_TESTS.read_text().replace(
        "      - eval_time: 2m\n        alertname: DolmenNodeUnhealthy\n        exp_alerts: []",
        "      - eval_time: 2m\n        alertname: DolmenNodeUnhealthy\n        exp_alerts:\n"
        "          - exp_labels: {severity: critical}",
        1,
    )
    assert bad != RULE_TESTS.read_text()
    (tmp_path / RULE_TESTS.name).write_text(bad)
    done = subprocess.run(
        [PROMTOOL, "test", "rules", str(tmp_path / RULE_TESTS.name)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "DolmenNodeUnhealthy" in done.stdout + done.stderr


def test_every_alert_has_a_severity_and_a_summary() -> None:
    for rule in _rules():
        assert rule["labels"]["severity"] in ("critical", "warning", "info"), rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]


def test_every_alert_is_unit_tested() -> None:
    tested = set(re.findall(r"alertname: (\w+)", RULE_TESTS.read_text()))
    assert set(_by_name()) <= tested, set(_by_name()) - tested


def test_rules_name_only_metrics_that_exist(tmp_path: Path) -> None:
    have = known(tmp_path)
    for rule in _rules():
        used = names_in(rule["expr"])
        assert used, rule["alert"]
        assert used <= have, (rule["alert"], used - have)


def _xids(expr: str) -> set[int]:
    return {int(n) for n in re.findall(r"DCGM_FI_DEV_XID_ERRORS == (\d+)", expr)}


def test_critical_xids_are_the_knowledge_base_s() -> None:
    kb = tomllib.loads((REPO / "src/dolmen/kb/data/xids.toml").read_text())
    critical = {row["xid"] for row in kb["xid"] if row["severity"] == "critical"}
    rules = _by_name()
    assert _xids(rules["GpuXidCritical"]["expr"]) == critical
    assert _xids(rules["GpuXidError"]["expr"]) == critical  # the "unless" part


def test_staleness_alert_agrees_with_the_timer() -> None:
    """The standard tier's file may be as old as the timer's interval plus its random delay
    plus a run's budget; the alert waits longer than that."""
    timer = load_unit(PACKAGING / "systemd/dolmen-validate.timer")
    svc = load_unit(PACKAGING / "systemd/dolmen-validate.service")
    gap = sum(
        (
            parse_duration(one(timer, "Timer", k).replace("min", "m"))
            for k in ("OnUnitInactiveSec", "RandomizedDelaySec")
        ),
        parse_duration(one(svc, "Service", "TimeoutStartSec").replace("min", "m")),
    )
    m = re.search(r"> (\d+) \* (\d+)$", _by_name()["DolmenVerdictStale"]["expr"])
    assert m is not None
    assert gap.total_seconds() < int(m.group(1)) * int(m.group(2))
