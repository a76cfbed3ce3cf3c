"""``dolmen tune reapply``: what a reboot undid of the active profile, and only that.

The active profile is the committed journal (verify.py). Its rows whose setting kind does
not persist by itself (``Setting.persists`` False: IRQ affinity, sysctl and /sys values,
the CPU governor, huge pages, GPU persistence mode) are read again and planned (pure);
rows of kinds that persist (files, units, the boot loader) are never looked at, and rows
the apply skipped stay skipped. A row whose target moved (an IRQ number that is now
another device's, ``Setting.moved``) is a ``skip`` with the reason, never written.

apply: lock -> the journal read again (still the active one) -> audit intent -> each
drifted row written, read back, and journaled as ``reapplied`` (row, before, after,
held) -> audit result. The originals a rollback restores stay the first apply's: a
reapply writes the profile's own values again, so there is nothing new to save, and a
reapply killed halfway is drift that the next reapply finishes (idempotent).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dolmen.errors import EnvironmentProblem
from dolmen.host import Host
from dolmen.tune import events
from dolmen.tune.engine import read_back
from dolmen.tune.journal import Journal, locked
from dolmen.tune.journal_view import JournalView, State
from dolmen.tune.model import Action, ApplyFailed, Change, StepSkipped
from dolmen.tune.restore import describe
from dolmen.tune.results import StepResult
from dolmen.tune.settings import SETTINGS
from dolmen.tune.verify import applied_rows

ACTION = "tune.reapply"


@dataclass(frozen=True)
class Row:
    """One non-persistent row of the active profile, planned again; ``index`` is its place
    in the journal's plan."""

    index: int
    change: Change
    moved: str = ""  # why the target is no longer the one journaled (then a skip)


@dataclass(frozen=True)
class Reapply:
    """The non-persistent rows of the active profile and, once applied, what became of
    each (``dolmen.tune.reapply/1``)."""

    profile: str
    journal: Path
    rows: tuple[Row, ...]
    outcomes: dict[int, StepResult] = field(default_factory=dict)
    applied: bool = False

    @property
    def writes(self) -> tuple[Row, ...]:
        """The rows a reapply writes: drifted, not moved."""
        return tuple(r for r in self.rows if r.change.action is Action.CHANGE)

    @property
    def moved(self) -> tuple[Row, ...]:
        """Rows whose target moved since the apply: only a new apply re-plans them."""
        return tuple(r for r in self.rows if r.moved)

    @property
    def complete(self) -> bool:
        """Every written row held (nothing failed or was refused) and none moved."""
        held = all(o.status == "done" and o.held for o in self.outcomes.values())
        return held and not self.moved

    def to_json(self) -> dict[str, Any]:
        """The ``dolmen.tune.reapply/1`` document."""
        rows = []
        for r in self.rows:
            o = self.outcomes.get(r.index)
            result = None
            if o is not None:
                result = {"status": o.status, "after": o.after, "held": o.held, "note": o.note}
            rows.append(
                {"row": r.index, **r.change.to_json(), "moved": bool(r.moved), "result": result}
            )
        return {
            "schema": "dolmen.tune.reapply/1",
            "profile": self.profile,
            "journal": str(self.journal),
            "dry_run": not self.applied,
            "complete": self.complete,
            "counts": {a.value: sum(1 for r in self.rows if r.change.action is a) for a in Action},
            "rows": rows,
        }


def plan_reapply(host: Host, view: JournalView) -> Reapply:
    """The non-persistent rows of ``view`` (an active journal), read and planned again."""
    rows = []
    for i, change in applied_rows(view):
        setting = SETTINGS[change.target.setting]
        if setting.persists:
            continue
        moved = setting.moved(host, change.target)
        if moved is not None:
            rows.append(
                Row(i, Change(change.target, None, Action.SKIP, change.effect, moved), moved)
            )
            continue
        rows.append(Row(i, setting.plan(change.target, setting.read(host, change.target))))
    return Reapply(view.profile, view.path, tuple(rows))


def apply_reapply(host: Host, plan: Reapply, folder: Path) -> Reapply:
    """Write the drifted rows of ``plan`` (see module docstring); raises EnvironmentProblem
    when the journal is no longer the active one it was planned from."""
    with locked(folder):
        journal = Journal(plan.journal)
        view = journal.view()
        if view.state is not State.ACTIVE:
            raise EnvironmentProblem(
                f"the journal of {view.profile} is {view.state.value}, no longer active",
                hint="`dolmen tune status` says where tuning stands",
            )
        detail: dict[str, Any] = {"journal": plan.journal.name, "rows": len(plan.writes)}
        events.intent(ACTION, plan.profile, detail)
        outcomes = {r.index: _write(host, journal, r) for r in plan.writes}
        done = Reapply(plan.profile, plan.journal, plan.rows, outcomes, applied=True)
        failed = [f"{r.change.target.name}: {o.note}" for r in plan.writes
                  if (o := outcomes[r.index]).status != "done" or not o.held]  # fmt: skip
        events.result(ACTION, plan.profile, done.complete, {**detail, "not_held": failed})
        return done


def _write(host: Host, journal: Journal, row: Row) -> StepResult:
    """Write one row, read it back, journal what happened."""
    change = row.change
    record: dict[str, Any] = {"type": "reapplied", "row": row.index, "before": change.current}
    try:
        SETTINGS[change.target.setting].apply(host, change)
    except StepSkipped as e:
        journal.append({**record, "skipped": str(e)})
        return StepResult(change, "skipped", change.current, False, str(e))
    except (OSError, ApplyFailed) as e:
        journal.append({**record, "error": describe(e)})
        return StepResult(change, "failed", change.current, False, describe(e))
    step = read_back(host, change)
    journal.append({**record, "after": step.after, "held": step.held})
    return step
