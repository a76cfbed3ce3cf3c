"""At level full a workload that did not run is why the verdict is undecided: the terminal
lists it with its reason, never under "passed or not applicable" (a CPU run once printed
UNDECIDED with nothing above it saying why, nor the figures it measured)."""

from __future__ import annotations

from dolmen.checks.model import Finding, Status
from dolmen.checks.verdict import Verdict
from dolmen.report.terminal import Options, report_lines


def _finding(check: str, category: str, status: Status, summary: str) -> Finding:
    return Finding(
        check=check,
        category=category,
        status=status,
        subject="host",
        summary=summary,
        remedy=None,
        evidence={},
    )


CPU = "measured on CPU, no GPU threshold (--device cpu): fp32 29.16 GFLOP/s"
FINDINGS = (
    _finding("workload.gemm", "workload", Status.SKIP, CPU),
    _finding("system.oom_kills", "system", Status.PASS, "no OOM kill"),
    _finding("gpu.xid", "gpu", Status.SKIP, "no NVIDIA GPU seen"),
)


def _text(level: str, opts: Options | None = None) -> str:
    v = Verdict("vm", level, FINDINGS, "2026-12-05T01:15:02Z", 1.0)
    return "\n".join(line.plain for line in report_lines(v, None, opts))


def test_a_workload_not_run_at_level_full_is_listed_with_its_reason() -> None:
    text = _text("full")
    assert f"SKIP  workload.gemm  host  {CPU}" in text
    assert "passed or not applicable: system (1 pass, 0 skip), gpu (0 pass, 1 skip)" in text
    assert "vm: UNDECIDED" in text


def test_below_full_and_under_a_status_filter_nothing_changes() -> None:
    assert "workload.gemm" not in _text("standard")  # no workload ran: not a problem there
    assert "workload.gemm" not in _text("full", Options(statuses=frozenset({Status.FAIL})))
