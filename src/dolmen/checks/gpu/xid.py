"""Xid events of the kernel log, joined to the GPUs by bus id, judged with the Xid catalogue.

The catalogue (``kb.xids``) gives each Xid a severity and an action; a few Xids need
more than their row, because the tools that judge them by number alone disagree
(../shared/notes/kb-sources.md):

- 13, 31, 43, 45: application faults. Warn at most, never drain: the next job runs fine.
- 63: a row remap (Ampere+) or page retirement (Volta and older) was scheduled. Fine when
  the repair worked: cross-check ``remapped_rows`` (pending: reset; failure: service) or
  ``retired_pages.pending``.
- 92: excessive single-bit errors, corrected. Warn, and point at the ECC counters.
- 109: context-switch timeout, usually the application's. Warn; fail when it repeats.
- 154: the GPU's recovery action changed. What the GPU reports now (``gpu_recovery_action``)
  decides; the line's new action only when the GPU cannot be read.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.gpu.actions import action_remedy
from dolmen.checks.gpu.gpus import subject_for_bus, target
from dolmen.checks.gpu.xid_traps import TRAPS, TrapInput, Verdict, short
from dolmen.checks.model import Level, Outcome, Status, check, passed, skipped
from dolmen.checks.recent import Window, grouped, log_unread, make_window
from dolmen.facts.kernel_log import KernelEvent, KernelLogFacts
from dolmen.host.gpu import Gpu
from dolmen.kb.xids import XidCatalogue

STATUS = {"critical": Status.FAIL, "warn": Status.WARN, "info": Status.PASS}
RANK = {Status.PASS: 0, Status.WARN: 1, Status.FAIL: 2}
SEVERITY_RANK = {"info": 0, "warn": 1, "critical": 2}


@check(
    "gpu.xid",
    title="No Xid in the kernel log's recent past that needs action",
    level=Level.QUICK,
    needs=("gpu", "kernel_log", "os"),
    when=("nvidia_gpu",),
    remedy="Follow the action of the worst Xid (NVIDIA Xid catalogue).",
    limits={"window_hours": 24, "xid109_repeats": 2},
    source=(
        "NVIDIA Xid catalogue and NVSentinel mapping (kb/data/xids.toml); window: aznhc looks "
        "back 2 h, dolmen 24 h ([validate] xid_window_hours); Xid 109 repeats: dolmen's judgement"
    ),
)
def xid(ctx: Context) -> list[Outcome]:
    """Reads the kernel log's Xid events, the uptime, and each GPU's remap, retirement, ECC and
    recovery-action state for the Xids that need a cross-check."""
    log = ctx.kernel_log
    if (unread := log_unread(log)) is not None:
        return [unread]
    gpus = ctx.gpu.gpus
    window = make_window(ctx, log)
    by_bus = grouped(log, "xid")
    out = [
        _judge(ctx, gpu.subject, gpu, by_bus.pop(gpu.pci_address, []), window, log) for gpu in gpus
    ]
    for bdf, events in by_bus.items():
        out.append(_judge(ctx, subject_for_bus(bdf, gpus), None, events, window, log))
    if not out and log.driver_gpus:  # the log shows the driver took GPUs, and no Xid came
        out.append(passed("host", "no Xid in the kernel log", **_span(log)))
    if not out:  # no GPU listed and no Xid: nothing to judge, and nothing to vouch for
        out.append(skipped("host", "no Xid in the kernel log, and the driver lists no GPU"))
    return out


def _span(log: KernelLogFacts) -> dict[str, Any]:
    return {
        "log": log.source,
        "lines": log.lines,
        "first_time": log.first_time.isoformat() if log.first_time else None,
        "last_time": log.last_time.isoformat() if log.last_time else None,
    }


def _judge(
    ctx: Context,
    subject: str,
    gpu: Gpu | None,
    events: list[KernelEvent],
    window: Window,
    log: KernelLogFacts,
) -> Outcome:
    if not events:
        return passed(subject, "no Xid in the kernel log", **_span(log))
    recent, older = window.split(events)
    ev: dict[str, Any] = {**window.evidence(), "older_events": _codes(older)}
    if not recent:
        return passed(
            subject,
            f"{len(older)} Xid events, all older than {window.hours:g} h "
            f"({', '.join(f'Xid {c}' for c in _codes(older))})",
            **ev,
        )
    by_code: dict[int, list[KernelEvent]] = defaultdict(list)
    for e in recent:
        by_code[e.xid if e.xid is not None else -1].append(e)
    verdicts = [
        _code(ctx, code, evs, gpu, window)
        for code, evs in sorted(by_code.items(), key=lambda kv: kv[0])
    ]
    verdicts.sort(key=lambda v: RANK[v.status], reverse=True)
    worst = verdicts[0]
    ev["events"] = [v.detail for v in verdicts]
    summary = "; ".join(v.summary for v in verdicts[:4])
    if len(verdicts) > 4:
        summary += f"; and {len(verdicts) - 4} more Xid numbers"
    if worst.status is Status.PASS:
        return passed(subject, f"informational only: {summary}", **ev)
    return Outcome(worst.status, subject, summary, worst.remedy, ev)


def _codes(events: Sequence[KernelEvent]) -> list[int]:
    return sorted({e.xid for e in events if e.xid is not None})


def _code(
    ctx: Context, code: int, evs: list[KernelEvent], gpu: Gpu | None, window: Window
) -> Verdict:
    kb: XidCatalogue = ctx.kb.xids
    assessed = [kb.assess("xid", code, fatal=e.fatal, recovery=e.recovery) for e in evs]
    a = max(assessed, key=lambda x: SEVERITY_RANK[x.severity])
    who = target(gpu) if gpu else (evs[0].bus_id or None)
    ages = [window.age_hours(e) for e in evs]
    known = [x for x in ages if x is not None]
    detail: dict[str, Any] = {
        "xid": code,
        "count": len(evs),
        "meaning": a.meaning,
        "severity": a.severity,
        "action": a.action,
        "newest_age_h": round(min(known), 2) if known else None,
        "processes": sorted({e.process for e in evs if e.process})[:5],
        "line": evs[-1].raw[:240],
    }
    label = f"Xid {code} x{len(evs)} ({short(a.meaning)})"
    v = Verdict(STATUS[a.severity], label, action_remedy(a.action, who), detail)
    trap = TRAPS.get(code)
    if trap is None:
        return v
    return trap(v, evs, gpu, TrapInput(who, int(ctx.limit("xid109_repeats"))))
