"""Apply a plan with a journal, complete or roll back what a journal started.

apply:    audit intent -> journal ``begin`` (the whole plan) -> for each step:
          journal the original (``save``, fsync) -> write -> read back ->
          journal ``done`` -> ``commit`` -> audit result. A write the host
          refuses stops the apply and rolls back what it did, at once.
rollback: restore.py: stray temporaries first, then in reverse order each
          original restored and read back; ``end`` only when all are back.
complete: the steps an interrupted apply had not finished, then ``commit``.

SIGINT/SIGTERM during the steps roll back on the spot (interrupt.py); a state disk
that refuses the journal (full, read-only) rolls back from memory, exit 4.

Each step's original is durable before its write starts, so whatever point
a process dies at (``crash.py``), the journal holds every original needed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dolmen import __version__
from dolmen.errors import AuditUnavailable, EnvironmentProblem, NeedsRoot
from dolmen.host import Host
from dolmen.tune import events
from dolmen.tune.crash import CrashPoints
from dolmen.tune.interrupt import Interrupted, Signals
from dolmen.tune.journal import Journal, JournalUnwritable, locked, open_journal
from dolmen.tune.journal_view import JournalView, State
from dolmen.tune.model import Action, ApplyFailed, Change, Plan, StepSkipped
from dolmen.tune.restore import describe, remove_stray_temporaries, restore, summary
from dolmen.tune.results import ApplyResult, RollbackResult, StepResult
from dolmen.tune.settings import SETTINGS


def require_root(host: Host, plan: Plan, *, doing: str = "applying") -> None:
    """NeedsRoot, naming what needs it, when a live host would be changed by a non-root user."""
    if host.kind != "live" or os.geteuid() == 0 or not plan.steps:
        return
    what = sorted({f"/{c.target.path}" if c.target.path else c.target.name for c in plan.steps})
    shown = ", ".join(what[:4]) + (f" and {len(what) - 4} more" if len(what) > 4 else "")
    raise NeedsRoot(
        f"{doing} {plan.profile} changes {len(plan.steps)} settings ({shown}): that needs root",
        hint="run it with sudo; `dolmen tune plan` and `status` work without root",
    )


def journal_plan(view: JournalView) -> Plan:
    """The part of a journal's plan that rollback or completion would touch, as a Plan."""
    touched = set(view.saved) | {i for i, c in enumerate(view.changes) if c.acts}
    changes = tuple(c for i, c in enumerate(view.changes) if i in touched)
    return Plan(view.profile, str(view.begin.get("host", "")), changes)


def apply_plan(
    host: Host,
    plan: Plan,
    folder: Path,
    *,
    extra: dict[str, Any] | None = None,
    kind: str = "tune",
) -> ApplyResult:
    """Apply every step of ``plan`` (see module docstring). ``kind`` names the audit
    actions (``tune.apply``; ``net.apply`` for dolmen net)."""
    require_root(host, plan)
    with locked(folder), Signals(armed=False) as sig:
        if open_journal(folder) is not None:
            raise EnvironmentProblem(
                "a profile is active or an apply was interrupted on this host",
                hint="`dolmen tune status` says which; roll it back or recover it first",
            )
        detail = {"host": plan.host, "steps": len(plan.steps), **(extra or {})}
        events.intent(f"{kind}.apply", plan.profile, detail)
        journal = Journal.create(
            folder,
            {
                "profile": plan.profile,
                "host": plan.host,
                "dolmen": __version__,
                "root": str(host.root),
                "changes": [c.to_json() for c in plan.changes],
                "steps": [i for i, c in enumerate(plan.changes) if c.acts],
                "notes": list(plan.notes),
                **(extra or {}),
            },
        )
        result = ApplyResult(journal.path, plan.profile)
        crash = CrashPoints("apply")
        crash.at(0)
        _guarded(host, journal, list(plan.changes), crash, result, sig)
        return _finish(host, journal, result, f"{kind}.apply", detail)


def complete(host: Host, view: JournalView, folder: Path, *, kind: str = "tune") -> ApplyResult:
    """Finish an interrupted apply: the steps it had not done, then commit. ``kind``
    names the audit action (``tune.recover``; ``net.recover`` for dolmen net)."""
    if view.state is not State.APPLYING:
        raise EnvironmentProblem(f"the journal of {view.profile} is {view.state}, not interrupted")
    with locked(folder), Signals(armed=False) as sig:
        detail = {"choice": "complete", "journal": view.path.name}
        events.intent(f"{kind}.recover", view.profile, detail)
        journal = Journal(view.path)
        view = journal.view()
        # The killed process may have left a temporary beside a file: the clean apply has none.
        remove_stray_temporaries(host, [view.changes[i] for i in view.steps])
        result = ApplyResult(view.path, view.profile)
        crash = CrashPoints("apply")
        _guarded(host, journal, view.changes, crash, result, sig, view)
        return _finish(host, journal, result, f"{kind}.recover", detail)


def rollback(
    host: Host, view: JournalView, folder: Path, *, reason: str, kind: str = "tune"
) -> RollbackResult:
    """Restore every original this journal saved, newest first; then close it.

    SIGINT and SIGTERM wait until it is done: a rollback is what stopping should lead to.
    """
    if view.state is State.CLOSED:
        raise EnvironmentProblem(f"the journal of {view.profile} is already closed")
    action = f"{kind}.rollback" if view.state is State.ACTIVE else f"{kind}.recover"
    detail = {"reason": reason, "journal": view.path.name, "from": view.state.value}
    with locked(folder), Signals(armed=False):
        events.intent(action, view.profile, detail)
        journal = Journal(view.path)
        res = restore(host, journal.view(), journal, reason)
        try:
            events.result(action, view.profile, res.complete, {**detail, **summary(res)})
        except AuditUnavailable as e:
            res.journal_lost = res.journal_lost or e.message
        return res


# --- the steps ---------------------------------------------------------------------------------
def _guarded(
    host: Host,
    journal: Journal,
    changes: Sequence[Change],
    crash: CrashPoints,
    result: ApplyResult,
    sig: Signals,
    view: JournalView | None = None,
) -> None:
    """Run the steps with SIGINT/SIGTERM armed; a signal or an unwritable journal stops
    them and leaves ``result.error`` set, for ``_finish`` to roll back."""
    try:
        try:
            sig.arm()
            _run_steps(host, journal, changes, crash, result, view)
        finally:
            sig.hold()
    except Interrupted as e:
        result.error = f"interrupted by {e}: rolled back"
        result.interrupted = str(e)
    except JournalUnwritable as e:
        result.error = result.state_error = e.message


def _run_steps(
    host: Host,
    journal: Journal,
    changes: Sequence[Change],
    crash: CrashPoints,
    result: ApplyResult,
    view: JournalView | None = None,
) -> None:
    steps = [i for i, c in enumerate(changes) if c.acts]
    for k, i in enumerate(steps):
        change = changes[i]
        if view is not None and (i in view.done or i in view.skipped):
            continue
        setting = SETTINGS[change.target.setting]
        try:
            if view is None or i not in view.saved:
                before = setting.read(host, change.target).value
                original = setting.capture(host, change)
                journal.append({"type": "save", "step": i, "original": original, "before": before})
            crash.at(1 + 2 * k)
            setting.apply(host, change)
        except StepSkipped as e:
            journal.append({"type": "skipped", "step": i, "reason": str(e)})
            result.steps.append(StepResult(change, "skipped", note=str(e)))
            continue
        except (OSError, ApplyFailed) as e:
            msg = f"{change.target.name}: {describe(e)}"
            journal.append({"type": "failed", "step": i, "error": msg})
            result.steps.append(StepResult(change, "failed", note=msg))
            result.error = msg
            return
        crash.at(2 + 2 * k)
        step = read_back(host, change)
        journal.append({"type": "done", "step": i, "after": step.after, "held": step.held})
        result.steps.append(step)
    crash.at(1 + 2 * len(steps))


def read_back(host: Host, change: Change) -> StepResult:
    """A written change read back: ``done``, with whether the host held it (the plan of
    what it reads is ok or pending) and, when not, what the host kept. Apply's steps and
    ``tune reapply``'s rows (reapply.py) both end here."""
    setting = SETTINGS[change.target.setting]
    after = setting.read(host, change.target)
    held = setting.plan(change.target, after).action in (Action.OK, Action.PENDING)
    note = "" if held else f"the host kept {setting.show(after.value)}"
    return StepResult(change, "done", after.value, held, note)


def _finish(
    host: Host, journal: Journal, result: ApplyResult, action: str, detail: dict[str, Any]
) -> ApplyResult:
    """Commit, or roll back what was written (signals are held here).

    A commit or an audit result the state disk refuses is a failed apply too: a change
    dolmen cannot record must not stand (exit 4), so it is rolled back, from memory if
    the journal cannot take another line.
    """
    if result.error is None:
        try:
            journal.append({"type": "commit"})
            events.result(action, result.profile, True, {**detail, "journal": journal.path.name})
            return result
        except AuditUnavailable as e:
            result.error = result.state_error = e.message
    result.rollback = restore(host, journal.view(), journal, f"apply failed: {result.error}")
    result.state_error = result.state_error or result.rollback.journal_lost
    try:
        events.result(
            action,
            result.profile,
            False,
            {**detail, "error": result.error, **summary(result.rollback)},
        )
    except AuditUnavailable as e:
        result.state_error = result.state_error or e.message
    return result
