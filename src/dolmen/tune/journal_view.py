"""What a journal says, checked record by record: the plan, how far apply and rollback got.

The lines are checked by ``journal_lines``; here each record is checked against the ones
before it, the way the engine writes them (engine.py): a ``save`` of a planned step
before its ``done``, ``skipped`` or ``reverted``; ``commit`` once every step is done or
skipped; ``reverted`` and ``end`` after ``rollback``; nothing after ``end``. A record
that breaks the order, or whose fields have the wrong type, is refused with the file and
line (exit 2): a rollback driven by a journal it misread would restore the wrong values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dolmen.compat import StrEnum
from dolmen.tune.journal_lines import damaged, decode
from dolmen.tune.model import Change
from dolmen.tune.settings import SETTINGS


class State(StrEnum):
    """Where a journal stands."""

    APPLYING = "applying"  # begun, not committed: interrupted unless its process still runs
    ACTIVE = "active"  # committed: the profile is in force
    ROLLING_BACK = "rolling-back"  # rollback begun, not finished: interrupted
    CLOSED = "closed"  # rolled back (or recovered) completely


STEP_KINDS = ("save", "done", "skipped", "failed", "reverted")
KINDS = (*STEP_KINDS, "commit", "rollback", "end", "reapplied")


@dataclass
class JournalView:
    """What a journal says: the plan, how far apply and rollback got."""

    path: Path
    begin: dict[str, Any]
    changes: list[Change]
    steps: list[int]
    saved: dict[int, dict[str, Any]] = field(default_factory=dict)
    before: dict[int, str | None] = field(default_factory=dict)  # value read before the save
    done: dict[int, dict[str, Any]] = field(default_factory=dict)
    skipped: dict[int, str] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    reverted: dict[int, dict[str, Any]] = field(default_factory=dict)  # the latest per step
    committed: str | None = None
    reapplied: dict[int, dict[str, Any]] = field(default_factory=dict)  # tune reapply, latest
    rollback: dict[str, Any] | None = None
    ended: str | None = None

    @classmethod
    def read(cls, path: Path) -> JournalView:
        """Parse and check a journal file; InputError (file:line) when it cannot be trusted."""
        return cls.from_records(path, decode(path).records)

    @classmethod
    def from_records(cls, path: Path, records: list[dict[str, Any]]) -> JournalView:
        """Check records already read (or kept in memory when the file cannot be written)."""
        if not records or records[0].get("type") != "begin":
            raise damaged(path, 1, "the first record is not a begin record")
        v = _from_begin(path, records[0])
        for n, rec in enumerate(records[1:], start=2):
            try:
                v._add(rec)
            except (ValueError, TypeError, KeyError) as e:
                raise damaged(path, n, str(e)) from None
        return v

    def _add(self, r: Mapping[str, Any]) -> None:
        kind = r.get("type")
        if self.ended is not None:
            raise ValueError(f"a {kind!r} record after the end record")
        if kind not in KINDS:
            raise ValueError(f"unknown record type {kind!r}")
        if kind in STEP_KINDS:
            self._step(str(kind), _step_of(r, self.steps), r)
        elif kind == "commit":
            missing = [i for i in self.steps if i not in self.done and i not in self.skipped]
            if self.committed is not None or self.rollback is not None or missing:
                raise ValueError(f"a commit with steps {missing} not written, or a second one")
            self.committed = str(r.get("time", ""))
        elif kind == "reapplied":
            self._reapplied(r)
        elif kind == "rollback":
            if self.rollback is not None:
                raise ValueError("a second rollback record")
            self.rollback = dict(r)
        else:  # end
            if self.rollback is None:
                raise ValueError("an end record without a rollback record")
            self.ended = _text(r, "state", "closed")

    def _reapplied(self, r: Mapping[str, Any]) -> None:
        """``tune reapply`` rewrote row ``row`` of the active profile (tune/reapply.py):
        only while the profile is active; the originals stay the apply's."""
        i = r.get("row")
        if self.committed is None or self.rollback is not None:
            raise ValueError("a reapplied record outside an active profile")
        if type(i) is not int or not 0 <= i < len(self.changes):
            raise ValueError(f"row {i!r} is not a row of the plan")
        _opt_text(r, "before")
        _opt_text(r, "after")
        self.reapplied[i] = dict(r)

    def _step(self, kind: str, i: int, r: Mapping[str, Any]) -> None:
        settled = self.committed is not None or self.rollback is not None
        if kind == "save":
            if i in self.saved or settled:
                raise ValueError(f"a save of step {i} twice or after commit/rollback")
            original = r.get("original")
            if not isinstance(original, dict):
                raise TypeError(f"the original of step {i} is not an object")
            self.saved[i] = dict(original)
            self.before[i] = _opt_text(r, "before")
            return
        if kind == "failed":
            if i in self.done or i in self.skipped or settled:
                raise ValueError(f"a failed record for step {i} that was already written")
            self.failed[i] = _text(r, "error", "")
            return
        if i not in self.saved:
            raise ValueError(f"a {kind} record for step {i} without its save record")
        if kind == "reverted":
            if self.rollback is None or self.reverted.get(i, {}).get("exact") is True:
                raise ValueError(f"a reverted record for step {i} outside a rollback, or twice")
            self.reverted[i] = dict(r)
            return
        if i in self.done or i in self.skipped or settled:
            raise ValueError(f"a {kind} record for step {i} twice or after commit/rollback")
        if kind == "done":
            _opt_text(r, "after")
            self.done[i] = dict(r)
        else:
            self.skipped[i] = _text(r, "reason", "")

    @property
    def state(self) -> State:
        """See ``State``."""
        if self.ended is not None:
            return State.CLOSED
        if self.rollback is not None:
            return State.ROLLING_BACK
        if self.committed is not None:
            return State.ACTIVE
        return State.APPLYING

    @property
    def profile(self) -> str:
        """The profile this journal applied."""
        return str(self.begin.get("profile", "?"))

    @property
    def progress(self) -> str:
        """``3 of 7 steps written``, for messages."""
        return f"{len(self.done) + len(self.skipped)} of {len(self.steps)} steps written"


def _from_begin(path: Path, begin: Mapping[str, Any]) -> JournalView:
    try:
        raw = begin.get("changes", [])
        if not isinstance(raw, list) or not all(isinstance(c, dict) for c in raw):
            raise TypeError("changes is not a list of objects")
        changes = [Change.from_json(c) for c in raw]
        unknown = sorted({c.target.setting for c in changes} - set(SETTINGS))
        if unknown:
            raise ValueError(f"unknown setting kinds {unknown}")
        steps = begin.get("steps", [i for i, c in enumerate(changes) if c.acts])
        if not isinstance(steps, list) or not all(type(s) is int for s in steps):
            raise TypeError("steps is not a list of integers")
        if len(set(steps)) != len(steps) or not all(
            0 <= s < len(changes) and changes[s].acts for s in steps
        ):
            raise ValueError("steps name changes that are not planned writes")
        for key in ("profile", "host", "root"):
            if key in begin and not isinstance(begin[key], str):
                raise TypeError(f"{key} is not a string")
    except (KeyError, ValueError, TypeError, AttributeError) as e:
        raise damaged(path, 1, f"the begin record is malformed: {e}") from None
    return JournalView(path, dict(begin), changes, list(steps))


def _step_of(r: Mapping[str, Any], steps: list[int]) -> int:
    i = r.get("step")
    if type(i) is not int or i not in steps:
        raise ValueError(f"step {i!r} is not a step of the plan")
    return i


def _text(r: Mapping[str, Any], key: str, default: str) -> str:
    v = r.get(key, default)
    if not isinstance(v, str):
        raise TypeError(f"{key} is not a string")
    return v


def _opt_text(r: Mapping[str, Any], key: str) -> str | None:
    v = r.get(key)
    if v is not None and not isinstance(v, str):
        raise TypeError(f"{key} is not a string or null")
    return v
