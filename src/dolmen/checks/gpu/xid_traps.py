"""The Xids a catalogue row cannot judge alone (see the ``gpu.xid`` module docstring).

Each trap takes the row's verdict for one Xid number on one GPU and corrects it with
what the GPU reports now (remap and retirement state, ECC counters, recovery action)
or with how often the Xid came back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dolmen.checks.gpu.actions import action_remedy, needs_recovery, recovery_remedy
from dolmen.checks.model import Status
from dolmen.facts.kernel_log import KernelEvent
from dolmen.frozen import frozen
from dolmen.host.gpu import Gpu

APP_FAULTS = frozenset({13, 31, 43, 45})
# One incident prints a line per channel within a second or two; lines further apart than
# this are separate incidents (Xid 109 "repeats" counts incidents, not lines).
INCIDENT_GAP_S = 60.0


@dataclass
class Verdict:
    """What one Xid number on one GPU amounts to."""

    status: Status
    summary: str
    remedy: str
    detail: dict[str, Any] = field(default_factory=dict)


@frozen
class TrapInput:
    """What a trap needs besides the events: the GPU's name for nvidia-smi -i, the limits."""

    who: str | None
    xid109_repeats: int


def short(meaning: str) -> str:
    """A catalogue meaning cut to its head for a summary line (the evidence keeps it whole)."""
    return meaning.split(": ", maxsplit=1)[0].split(" (", maxsplit=1)[0]


def _app_fault(v: Verdict, evs: Sequence[KernelEvent], gpu: Gpu | None, c: TrapInput) -> Verdict:
    # Never a reason to drain: cap at warn, and the remedy is the application's.
    v.status = Status.WARN if v.status is not Status.PASS else Status.PASS
    v.remedy = action_remedy("restart_app", c.who)
    v.detail["note"] = "application fault: never a reason to drain the node"
    return v


def _xid63(v: Verdict, evs: Sequence[KernelEvent], gpu: Gpu | None, c: TrapInput) -> Verdict:
    if gpu is None:
        v.status = Status.WARN
        v.summary += ": the GPU is not listed, the repair cannot be confirmed"
        return v
    rr, rp = gpu.remapped_rows, gpu.retired_pages
    v.detail |= {
        "remap_pending": rr.pending,
        "remap_failure": rr.failure,
        "retire_pending": rp.pending,
    }
    if rr.failure:
        v.status = Status.FAIL
        v.summary += ": the row remap FAILED"
        v.remedy = action_remedy("drain_and_service", c.who)
    elif rr.pending or rp.pending:
        v.status = Status.WARN
        v.summary += ": the repair waits for a GPU reset (see gpu.row_remap / gpu.retired_pages)"
        v.remedy = (
            f"Reset the GPU when it is idle (nvidia-smi -r -i {c.who}) to activate the repair."
        )
    elif rr.failure is None and rp.pending is None:
        v.status = Status.WARN
        v.summary += ": the repair state could not be read"
    else:
        v.status = Status.PASS
        v.summary += ": the repair is done"
    return v


def _xid92(v: Verdict, evs: Sequence[KernelEvent], gpu: Gpu | None, c: TrapInput) -> Verdict:
    v.status = Status.WARN
    v.summary += ": check the corrected-error counters (gpu.ecc.volatile_correctable)"
    if gpu is not None:
        v.detail["aggregate_correctable"] = gpu.ecc.aggregate.correctable
        v.detail["volatile_correctable"] = gpu.ecc.volatile.correctable
    v.remedy = (
        "Watch the corrected ECC counters (nvidia-smi -q -d ECC); if they keep rising, run "
        f"dcgmi diag -r 3 and service the GPU ({c.who})."
    )
    return v


def _xid109(v: Verdict, evs: Sequence[KernelEvent], gpu: Gpu | None, c: TrapInput) -> Verdict:
    incidents = _incidents(evs)
    v.detail["incidents"] = incidents
    if incidents >= c.xid109_repeats:
        v.status = Status.FAIL
        v.summary += f": {incidents} separate incidents"
        v.remedy = action_remedy("reset_gpu", c.who)
    else:
        v.status = Status.WARN
        v.remedy = action_remedy("restart_app", c.who)
    return v


def _xid154(v: Verdict, evs: Sequence[KernelEvent], gpu: Gpu | None, c: TrapInput) -> Verdict:
    now = gpu.reset.recovery_action if gpu is not None else None
    v.detail["recovery_action_now"] = now
    if now is None:
        return v  # the line's own new action decided (kb assess)
    if needs_recovery(now):
        v.status = Status.FAIL
        v.summary += f": the GPU asks for '{now}'"
        v.remedy = recovery_remedy(now, c.who)
    else:
        v.status = Status.PASS
        v.summary += ": the GPU now reports recovery action None"
    return v


def _incidents(evs: Sequence[KernelEvent]) -> int:
    """Separate incidents: lines more than INCIDENT_GAP_S apart (each line one when untimed)."""
    stamps: list[float] = []
    untimed = 0
    for e in evs:
        if e.time is not None:
            stamps.append(e.time.timestamp())
        elif e.boot_seconds is not None:
            stamps.append(e.boot_seconds)
        else:
            untimed += 1
    stamps.sort()
    count = 0
    last: float | None = None
    for t in stamps:
        if last is None or t - last > INCIDENT_GAP_S:
            count += 1
        last = t
    return count + untimed


Trap = Callable[[Verdict, Sequence[KernelEvent], Gpu | None, TrapInput], Verdict]
TRAPS: dict[int, Trap] = {
    **dict.fromkeys(APP_FAULTS, _app_fault),
    63: _xid63,
    92: _xid92,
    109: _xid109,
    154: _xid154,
}
