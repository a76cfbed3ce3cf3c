"""Apply a plan with a journal, complete or roll back what a journal started.

apply:    audit intent -> journal ``begin`` (the whole plan) -> for each step:
          journal the original (``save``, fsync) -> write -> read back ->
          journal ``done`` -> ``commit`` -> audit result. A write the host
          refuses stops the apply and rolls back what it did, at once.
rollback: in reverse order, read what is there now (reporting values someone
          else changed since), restore the original, read it back; then
          ``end``. Restoring is idempotent, so a rollback killed halfway
          simply runs again.
complete: the steps an interrupted apply had not finished, then ``commit``.

Each step's original is durable before its write starts, so whatever point
a process dies at (``crash.py``), the journal holds every original needed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dolmen import __version__
from dolmen.errors import EnvironmentProblem, NeedsRoot
from dolmen.host import Host
from dolmen.tune import events
from dolmen.tune.crash import CrashPoints
from dolmen.tune.journal import Journal, JournalView, State, locked, open_journal
from dolmen.tune.model import Action, ApplyFailed, Change, Plan, StepSkipped
from dolmen.tune.settings import SETTINGS


@dataclass(frozen=True)
class StepResult:
    """How one step of an apply went."""

    change: Change
    status: str  # done | skipped | failed
    after: str | None = None
    held: bool = True  # the value read back is the one written
    note: str = ""


@dataclass(frozen=True)
class Restored:
    """One original put back by a rollback."""

    change: Change
    found: str | None  # what was there before restoring
    had_set: str | None  # what dolmen had written (None: never written)
    before: str | None  # the original value
    restored: str | None  # what is there now
    by_others: bool  # someone changed it after dolmen did
    exact: bool  # restored equals the original
    error: str = ""


@dataclass
class RollbackResult:
    """What a rollback restored; ``complete`` False when a revert failed (rerun it)."""

    journal: Path
    profile: str
    restored: list[Restored] = field(default_factory=list)
    complete: bool = True

    def to_json(self) -> dict[str, Any]:
        """The ``dolmen.tune.rollback/1`` document."""
        return {
            "schema": "dolmen.tune.rollback/1",
            "profile": self.profile,
            "journal": str(self.journal),
            "complete": self.complete,
            "restored": [
                {
                    "target": r.change.target.name,
                    "found": r.found,
                    "had_set": r.had_set,
                    "original": r.before,
                    "restored": r.restored,
                    "changed_by_others": r.by_others,
                    "exact": r.exact,
                    "error": r.error or None,
                }
                for r in self.restored
            ],
        }


@dataclass
class ApplyResult:
    """What an apply did; on failure, ``error`` and the rollback that followed."""

    journal: Path
    profile: str
    steps: list[StepResult] = field(default_factory=list)
    error: str | None = None
    rollback: RollbackResult | None = None

    @property
    def ok(self) -> bool:
        """Whether the profile is now active."""
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        """The ``dolmen.tune.apply/1`` document."""
        doc: dict[str, Any] = {
            "schema": "dolmen.tune.apply/1",
            "profile": self.profile,
            "journal": str(self.journal),
            "ok": self.ok,
            "error": self.error,
            "steps": [
                {
                    "target": s.change.target.name,
                    "status": s.status,
                    "after": s.after,
                    "held": s.held,
                }
                for s in self.steps
            ],
        }
        if self.rollback is not None:
            doc["rollback"] = self.rollback.to_json()
        return doc


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
    host: Host, plan: Plan, folder: Path, *, extra: dict[str, Any] | None = None
) -> ApplyResult:
    """Apply every step of ``plan`` (see module docstring)."""
    require_root(host, plan)
    with locked(folder):
        if open_journal(folder) is not None:
            raise EnvironmentProblem(
                "a profile is active or an apply was interrupted on this host",
                hint="`dolmen tune status` says which; roll it back or recover it first",
            )
        detail = {"host": plan.host, "steps": len(plan.steps), **(extra or {})}
        events.intent("tune.apply", plan.profile, detail)
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
        _run_steps(host, journal, list(plan.changes), crash, result)
        return _finish(host, journal, result, crash, "tune.apply", detail)


def complete(host: Host, view: JournalView, folder: Path) -> ApplyResult:
    """Finish an interrupted apply: the steps it had not done, then commit."""
    if view.state is not State.APPLYING:
        raise EnvironmentProblem(f"the journal of {view.profile} is {view.state}, not interrupted")
    with locked(folder):
        detail = {"choice": "complete", "journal": view.path.name}
        events.intent("tune.recover", view.profile, detail)
        journal = Journal(view.path)
        result = ApplyResult(view.path, view.profile)
        crash = CrashPoints("apply")
        _run_steps(host, journal, view.changes, crash, result, view)
        return _finish(host, journal, result, crash, "tune.recover", detail)


def rollback(host: Host, view: JournalView, folder: Path, *, reason: str) -> RollbackResult:
    """Restore every original this journal saved, newest first; then close it."""
    if view.state is State.CLOSED:
        raise EnvironmentProblem(f"the journal of {view.profile} is already closed")
    action = "tune.rollback" if view.state is State.ACTIVE else "tune.recover"
    detail = {"reason": reason, "journal": view.path.name, "from": view.state.value}
    with locked(folder):
        events.intent(action, view.profile, detail)
        res = _rollback(host, view, reason)
        events.result(action, view.profile, res.complete, {**detail, **_summary(res)})
        return res


# --- the steps ---------------------------------------------------------------------------------
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
            msg = f"{change.target.name}: {_describe(e)}"
            journal.append({"type": "failed", "step": i, "error": msg})
            result.steps.append(StepResult(change, "failed", note=msg))
            result.error = msg
            return
        crash.at(2 + 2 * k)
        after = setting.read(host, change.target)
        held = setting.plan(change.target, after).action in (Action.OK, Action.PENDING)
        journal.append({"type": "done", "step": i, "after": after.value, "held": held})
        note = "" if held else f"the host kept {setting.show(after.value)}"
        result.steps.append(StepResult(change, "done", after.value, held, note))
    crash.at(1 + 2 * len(steps))


def _finish(
    host: Host,
    journal: Journal,
    result: ApplyResult,
    crash: CrashPoints,
    action: str,
    detail: dict[str, Any],
) -> ApplyResult:
    if result.error is None:
        journal.append({"type": "commit"})
        events.result(action, result.profile, True, {**detail, "journal": journal.path.name})
        return result
    result.rollback = _rollback(host, journal.view(), f"apply failed: {result.error}")
    events.result(
        action,
        result.profile,
        False,
        {**detail, "error": result.error, **_summary(result.rollback)},
    )
    return result


def _rollback(host: Host, view: JournalView, reason: str) -> RollbackResult:
    journal = Journal(view.path)
    if view.rollback is None:
        journal.append({"type": "rollback", "reason": reason})
    crash = CrashPoints("rollback")
    crash.at(0)
    res = RollbackResult(view.path, view.profile)
    for n, i in enumerate(sorted(view.saved, reverse=True)):
        if i in view.reverted:
            continue
        change = view.changes[i]
        setting = SETTINGS[change.target.setting]
        found = setting.read(host, change.target).value
        had_set = view.done.get(i, {}).get("after")
        before = view.before.get(i)
        by_others = (
            i in view.done
            and not _same(setting, found, had_set)
            and not _same(setting, found, before)
        )
        error = ""
        try:
            setting.revert(host, change, view.saved[i])
        except (OSError, ApplyFailed) as e:
            error = _describe(e)
            res.complete = False
        restored = setting.read(host, change.target).value
        exact = not error and _same(setting, restored, before)
        crash.at(n + 1)
        if not error:
            journal.append(
                {
                    "type": "reverted",
                    "step": i,
                    "found": found,
                    "restored": restored,
                    "by_others": by_others,
                    "exact": exact,
                }
            )
        res.restored.append(
            Restored(change, found, had_set, before, restored, by_others, exact, error)
        )
    if res.complete:
        _remove_stray_temporaries(host, [view.changes[i] for i in view.saved])
        journal.append({"type": "end", "state": "rolled-back"})
    return res


def _same(setting: Any, a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a is b
    return bool(setting.same(a, b)) or a == b


def _remove_stray_temporaries(host: Host, changes: list[Change]) -> None:
    """A process killed inside an atomic write leaves ``.<name>.dolmen-tmp-<pid>``: remove it."""
    for c in changes:
        path = c.target.path
        if not path or path.startswith(("proc/", "sys/")):
            continue
        folder, _, name = path.rpartition("/")
        for tmp in host.glob(f"{folder}/.{name}.dolmen-tmp-*"):
            host.remove(tmp)


def _summary(res: RollbackResult) -> dict[str, Any]:
    return {
        "restored": len(res.restored),
        "changed_by_others": [r.change.target.name for r in res.restored if r.by_others],
        "not_exact": [r.change.target.name for r in res.restored if not r.exact],
        "complete": res.complete,
    }


def _describe(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror:
        return f"{e.strerror} (errno {e.errno})"
    return str(e) or e.__class__.__name__
