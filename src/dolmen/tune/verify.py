"""Compare the host with the active profile (``dolmen tune verify``, the ``tuning.drift`` check).

The active profile is the committed journal: its plan names every target
that was applied, with the desired value it had. Verify reads each one again
and plans it: ``ok`` is in sync, ``pending`` waits for a reboot or restart,
``change`` is drift (someone or something changed it since), ``skip`` means
it can no longer be read. Targets that were skipped at apply time are not
judged. Verify never writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dolmen.host import Host
from dolmen.tune.journal import is_locked, open_journal, tune_dir
from dolmen.tune.journal_view import JournalView, State
from dolmen.tune.model import Action, Change
from dolmen.tune.settings import SETTINGS


@dataclass(frozen=True)
class Verification:
    """The re-planned targets of the active profile."""

    profile: str
    journal: Path
    rows: tuple[Change, ...]

    def count(self, action: Action) -> int:
        """How many rows have ``action``."""
        return sum(1 for r in self.rows if r.action is action)

    @property
    def drift(self) -> tuple[Change, ...]:
        """Targets no longer as the profile set them."""
        return tuple(r for r in self.rows if r.action is Action.CHANGE)

    def to_json(self) -> dict[str, Any]:
        """The ``dolmen.tune.verify/1`` document."""
        return {
            "schema": "dolmen.tune.verify/1",
            "profile": self.profile,
            "journal": str(self.journal),
            "in_sync": not self.drift,
            "counts": {a.value: self.count(a) for a in Action},
            "rows": [r.to_json() for r in self.rows],
        }


def applied_rows(view: JournalView) -> Iterator[tuple[int, Change]]:
    """(index, change) of each row of the journal's plan that its apply wrote or found
    already in place: the rows verify judges and ``tune reapply`` may write again."""
    for i, change in enumerate(view.changes):
        if change.action is not Action.SKIP and i not in view.skipped:
            yield i, change


def verify_journal(host: Host, view: JournalView) -> Verification:
    """Re-read every target the journal applied or found already in place."""
    rows = []
    for _, change in applied_rows(view):
        setting = SETTINGS[change.target.setting]
        rows.append(setting.plan(change.target, setting.read(host, change.target)))
    return Verification(view.profile, view.path, tuple(rows))


@dataclass(frozen=True)
class TuneStatus:
    """Where tuning stands on a host."""

    folder: Path
    journal: JournalView | None
    interrupted: bool  # an apply or a rollback died halfway
    busy: bool  # another dolmen process holds the lock now

    @property
    def active(self) -> str | None:
        """The active profile, if one is committed."""
        if self.journal is not None and self.journal.state is State.ACTIVE:
            return self.journal.profile
        return None


def tune_status(host: Host) -> TuneStatus:
    """The open journal of ``host``, and whether it was interrupted."""
    folder = tune_dir(host)
    view = open_journal(folder)
    busy = is_locked(folder)
    interrupted = (
        view is not None and view.state in (State.APPLYING, State.ROLLING_BACK) and not busy
    )
    return TuneStatus(folder, view, interrupted, busy)


def status_doc(host: Host, st: TuneStatus) -> dict[str, Any]:
    """The ``dolmen.tune.status/1`` document: the open journal, drift and pending values."""
    j = st.journal
    doc: dict[str, Any] = {
        "schema": "dolmen.tune.status/1",
        "host": host.hostname,
        "active": st.active,
        "state": j.state.value if j else "none",
        "journal": str(j.path) if j else None,
        "interrupted": st.interrupted,
        "busy": st.busy,
    }
    if j is not None:
        doc["applied_at"] = j.committed
        doc["progress"] = j.progress
    if st.active is not None and j is not None:
        v = verify_journal(host, j)
        doc["drift"] = [r.target.name for r in v.drift]
        doc["pending"] = [r.target.name for r in v.rows if r.action is Action.PENDING]
    return doc
