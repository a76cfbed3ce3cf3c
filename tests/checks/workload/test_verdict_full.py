"""At level full a workload that did not run leaves the verdict undecided, never healthy."""

from __future__ import annotations

import pytest

from dolmen.checks.model import Finding, Status
from dolmen.checks.verdict import Health, Verdict, judge


def _f(check: str, status: Status, gating: bool = True) -> Finding:
    return Finding(check, check.split(".")[0], status, "host", "s", None, {}, gating)


PASS = _f("gpu.ecc", Status.PASS)


@pytest.mark.parametrize(
    ("findings", "level", "health"),
    [
        ([PASS, _f("workload.gemm", Status.PASS)], "full", Health.HEALTHY),
        ([PASS, _f("workload.gemm", Status.SKIP)], "full", Health.UNDECIDED),
        ([PASS, _f("workload.gemm", Status.SKIP)], "standard", Health.HEALTHY),
        ([PASS, _f("gpu.nvlink", Status.SKIP)], "full", Health.HEALTHY),  # not a workload
        ([_f("workload.gemm", Status.SKIP), _f("gpu.ecc", Status.FAIL)], "full", Health.UNHEALTHY),
        ([_f("workload.gemm", Status.UNKNOWN)], "full", Health.UNDECIDED),
        ([_f("workload.gemm", Status.SKIP, gating=False)], "full", Health.HEALTHY),
    ],
)
def test_judge_at_level_full(findings: list[Finding], level: str, health: Health) -> None:
    assert judge(findings, level) is health


def test_the_skipped_workload_is_named_among_the_problems() -> None:
    skip = _f("workload.gemm", Status.SKIP)
    v = Verdict("n", "full", (PASS, skip, _f("gpu.nvlink", Status.SKIP)), "t", 0.0)
    assert v.health is Health.UNDECIDED
    assert v.problems() == [skip]
    assert Verdict("n", "standard", (PASS, skip), "t", 0.0).problems() == []
