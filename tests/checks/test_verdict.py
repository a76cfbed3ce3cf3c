"""The verdict of a run: how findings add up to one health word and an exit code."""

from __future__ import annotations

from dolmen.checks.model import Finding, Status
from dolmen.checks.verdict import Health, judge


def _f(check: str, status: Status, gating: bool = True) -> Finding:
    return Finding(check, check.split(".")[0], status, "host", status.value, None, {}, gating)


def test_judge_precedence() -> None:
    assert judge([_f("a.b", Status.PASS)]) is Health.HEALTHY
    assert judge([_f("a.b", Status.PASS), _f("a.c", Status.WARN)]) is Health.DEGRADED
    assert judge([_f("a.b", Status.UNKNOWN), _f("a.c", Status.WARN)]) is Health.UNDECIDED
    assert judge([_f("a.b", Status.UNKNOWN), _f("a.c", Status.FAIL)]) is Health.UNHEALTHY
    assert judge([_f("a.b", Status.ERROR)]) is Health.UNDECIDED
    # advisory checks never change the verdict beyond degraded
    assert judge([_f("tuning.x", Status.UNKNOWN, gating=False)]) is Health.HEALTHY
    assert judge([_f("tuning.x", Status.FAIL, gating=False)]) is Health.DEGRADED
    assert Health.UNHEALTHY.exit_code == 1 and Health.UNDECIDED.exit_code == 2
    assert Health.DEGRADED.exit_code == 0
