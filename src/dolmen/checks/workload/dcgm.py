"""``workload.dcgm_diag``: DCGM's diagnostic run live (``dcgmi diag -r 3 -j`` at level
full), each test folded into findings with DCGM's own severities.

The judging is ``gpu.dcgm_diag``'s (a recorded run in a bundle): one outcome per GPU, the
worst of its tests, DCGM's message and error ids as evidence. Where dcgmi is not
installed the check skips and says so; where it ran but said nothing readable (no
nv-hostengine, a malformed document) it is unknown.
"""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.gpu.dcgm import judge_results
from dolmen.checks.model import Level, Outcome, check, unknown
from dolmen.checks.workload.common import result_of
from dolmen.facts import FactError


@check(
    "workload.dcgm_diag",
    title="DCGM's diagnostic (dcgmi diag -r 3), run now, passes on every GPU",
    level=Level.FULL,
    needs=("gpu",),
    remedy=(
        "Drain the node and service the GPU DCGM names; DCGM's diagnostics guide explains "
        "each error id. Rerun dcgmi diag -r 3 to confirm."
    ),
    source="DCGM dcgmi diag -j (DCGM's own pass/warn/fail per test and GPU)",
)
def dcgm_diag(ctx: Context) -> list[Outcome]:
    """Reads the ``dcgm`` workload's parsed run and the ``gpu`` facts (to name GPUs)."""
    result, why = result_of(ctx, "dcgm")
    if result is None:
        return why
    facts = result.facts
    level = f"dcgmi diag -r {result.level}"
    why = facts.unread.get("diag")
    if why is not None:
        return [unknown("host", f"{level} gave nothing readable: {why}", reason=why)]
    if facts.runtime_error:
        return [unknown("host", f"{level} did not run: {facts.runtime_error}")]
    try:
        gpus = ctx.gpu.gpus
    except FactError:
        gpus = ()
    return judge_results(facts, gpus) or [unknown("host", f"{level} reported no test")]
