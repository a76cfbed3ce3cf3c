"""A recorded DCGM diagnostic (``dcgmi diag -j``), judged as DCGM judged it.

dolmen does not re-derive DCGM's thresholds: a test DCGM failed on a GPU fails on that
GPU with DCGM's own message, a warning warns, and a GPU whose every test passed passes.
DCGM numbers GPUs by NVML index; the subject is the listed GPU with that serial (DCGM 4
names serials) or that position, else ``gpu:<n>`` (the bundle has no inventory
to name its bus id). No diagnostic in the bundle is a skip, never a pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown, warned
from dolmen.facts import FactError
from dolmen.facts.dcgm import LIVE, DcgmFacts, DiagResult
from dolmen.host.command import NOT_IN_BUNDLE
from dolmen.host.gpu import Gpu
from dolmen.values.busid import gpu_subject

_ORDER = {"fail": 3, "warn": 2, "pass": 1}
_SKIP_REASONS = (NOT_IN_BUNDLE, "missing", "not supported")


@check(
    "gpu.dcgm_diag",
    title="A recorded DCGM diagnostic (dcgmi diag) passed on every GPU",
    # Standard, not quick: on a live node (the Slurm health check's case) there is never a
    # recorded diagnostic, so the quick tier would pay the import for a skip every run.
    level=Level.STANDARD,
    needs=("dcgm", "gpu"),
    remedy=(
        "Drain the node (<drain>), rerun dcgmi diag -r 3 on it, and service the GPU that "
        "fails again; "
        "DCGM's message names the failing part (see DCGM's diagnostics guide for the error id)."
    ),
    source="DCGM dcgmi diag -j results (DCGM's own pass/warn/fail per test and GPU)",
)
def dcgm_diag(ctx: Context) -> list[Outcome]:
    """Reads ``dcgm.results`` (test, GPU, status, DCGM's warnings) and ``dcgm.runtime_error``."""
    facts: DcgmFacts = ctx.facts("dcgm")
    why = facts.unread.get("diag")
    if why is not None:
        if why.startswith(_SKIP_REASONS):
            return [skipped("host", f"no DCGM diagnostic: {why}{_on_live(ctx, why)}", reason=why)]
        return [unknown("host", f"the recorded DCGM diagnostic could not be read: {why}")]
    if facts.runtime_error:
        return [
            unknown(
                "host",
                f"the recorded DCGM diagnostic did not run: {facts.runtime_error}",
                runtime_error=facts.runtime_error,
            )
        ]
    try:
        gpus: Sequence[Gpu] = ctx.facts("gpu").gpus
    except FactError:
        gpus = ()
    return judge_results(facts, gpus)


def _on_live(ctx: Context, why: str) -> str:
    """Where a live host's diagnostic is, true at each level: this full run's own
    ``workload.dcgm_diag``, or the full tier a standard run can be raised to."""
    if why != LIVE:
        return ""
    if ctx.workloads is not None:
        return "; workload.dcgm_diag reports the one this full run starts, or why none runs"
    return "; dolmen validate --level full runs dcgmi diag (workload.dcgm_diag)"


def judge_results(facts: DcgmFacts, gpus: Sequence[Gpu]) -> list[Outcome]:
    """One outcome per GPU (and ``host``) of a diagnostic's results, DCGM's severities
    unchanged; also what ``workload.dcgm_diag`` says of a run it started."""
    by_subject: dict[str, list[DiagResult]] = {}
    for r in facts.results:
        by_subject.setdefault(_subject(r.gpu, gpus, facts), []).append(r)
    return [_judge(subject, results, facts) for subject, results in by_subject.items()]


def _judge(subject: str, results: list[DiagResult], facts: DcgmFacts) -> Outcome:
    worst = max(results, key=lambda r: _ORDER.get(r.status, 0))
    bad = [r for r in results if r.status == worst.status]
    ev: dict[str, Any] = {
        "tests": {r.test: r.status for r in results},
        "dcgm_version": facts.version,
        "gpu_id": results[0].gpu,
    }
    if worst.status in ("fail", "warn"):
        said = "; ".join(_said(r) for r in bad)
        ids = sorted({i for r in bad for i in r.error_ids})
        verb = "failed" if worst.status == "fail" else "warned in"
        summary = f"DCGM {verb} {', '.join(r.test for r in bad)}: {said}"
        make = failed if worst.status == "fail" else warned
        return make(subject, summary, error_ids=ids, **ev)
    cut = facts.unread.get("rest")
    if worst.status == "pass" and cut:  # a cut table: the tests after the cut were not read
        return unknown(subject, f"DCGM passed the {len(results)} tests read; {cut}", **ev)
    if worst.status == "pass":
        return passed(subject, f"DCGM diagnostic passed ({len(results)} tests)", **ev)
    return skipped(subject, f"DCGM ran no test here (status {worst.status!r})", **ev)


def _said(r: DiagResult) -> str:
    return " / ".join(r.messages) if r.messages else f"{r.test}: {r.status}"


def _subject(gpu_id: int | None, gpus: Sequence[Gpu], facts: DcgmFacts) -> str:
    if gpu_id is None:
        return "host"
    serial = facts.serials.get(gpu_id)
    # Serials are often scrubbed alike in shared bundles (0000000000000): only a serial
    # that names one GPU names it.
    same = [g for g in gpus if serial and g.serial == serial]
    match = same[0] if len(same) == 1 else None
    if match is None:
        match = next((g for g in gpus if g.position == gpu_id), None)
    return match.subject if match is not None else gpu_subject(index=gpu_id)
