"""What an apply and a rollback did: the ``dolmen.tune.apply/1`` and ``rollback/1`` documents."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dolmen.tune.model import Change


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
    exact: bool  # read back after the restore, it equals the original
    error: str = ""  # the host refused the restore, or what still differs


@dataclass
class RollbackResult:
    """What a rollback restored.

    ``complete`` is True only when every original was read back as it was saved (bytes,
    mode, absence, the folders apply created gone); otherwise the journal stays open and
    ``recover --rollback`` retries what is not back. ``journal_lost`` says why the
    journal could not be written (the restore then ran from memory).
    """

    journal: Path
    profile: str
    restored: list[Restored] = field(default_factory=list)
    complete: bool = True
    journal_lost: str | None = None

    @property
    def not_back(self) -> list[Restored]:
        """The originals that are not back."""
        return [r for r in self.restored if r.error or not r.exact]

    def to_json(self) -> dict[str, Any]:
        """The ``dolmen.tune.rollback/1`` document."""
        return {
            "schema": "dolmen.tune.rollback/1",
            "profile": self.profile,
            "journal": str(self.journal),
            "complete": self.complete,
            "journal_lost": self.journal_lost,
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
    """What an apply did; on failure, ``error`` and the rollback that followed.

    ``interrupted`` is the signal (SIGINT, SIGTERM) that stopped it; ``state_error`` says
    that the state disk refused the journal or the audit log (exit 4).
    """

    journal: Path
    profile: str
    steps: list[StepResult] = field(default_factory=list)
    error: str | None = None
    rollback: RollbackResult | None = None
    interrupted: str | None = None
    state_error: str | None = None

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
            "interrupted": self.interrupted,
            "state_error": self.state_error,
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
