"""What every workload check shares: its workload's result or why there is none, and the
CPU rule (a run on CPU torch is reported as measured, never as a GPU's health)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Outcome, Status, skipped, unknown

CPU_NOTE = "measured on CPU, no GPU threshold (--device cpu)"


def result_of(ctx: Context, name: str) -> tuple[Any, list[Outcome]]:
    """(the result of workload ``name``, []) or (None, [the outcome saying why not])."""
    from dolmen.workloads.model import Aborted, Unavailable

    if ctx.workloads is None:
        why = "workloads run on the live host only: this is a bundle"
        if ctx.host.kind == "live":
            why = "workloads run at level full (dolmen validate --level full)"
        return None, [skipped("host", why)]
    try:
        return ctx.workloads.run(name), []
    except Unavailable as e:
        return None, [skipped("host", e.reason)]
    except Aborted as e:
        return None, [unknown("host", f"the {name} workload was interrupted ({e})")]


def on_cpu(outcomes: Iterable[Outcome]) -> list[Outcome]:
    """A CPU run's outcomes as skips that say what was measured and what the GPU rule
    would have said (``judged``): the threshold logic runs for real, the verdict cannot
    become healthy on it."""
    return [
        Outcome(
            Status.SKIP,
            o.subject,
            f"{CPU_NOTE}: {o.summary}",
            None,
            {**o.evidence, "judged": o.status.value},
        )
        for o in outcomes
    ]


def median(values: Sequence[float]) -> float | None:
    """The median of the measured values (None for none)."""
    return statistics.median(values) if values else None


def spread(values: Sequence[float], unit: str) -> str:
    """``1410-1980 MHz`` (or one value; "" with none): what was sampled during a run."""
    if not values:
        return ""
    lo, hi = min(values), max(values)
    return f"{lo:.0f} {unit}" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f} {unit}"
