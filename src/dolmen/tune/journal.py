"""The apply journal: what was planned, each original before it was changed, each result.

One JSON-lines file per apply under ``<state dir>/tune/journals/``; every
line is written, flushed and fsync'd before the action it announces starts,
so after a crash or a power loss the file says exactly how far the apply got:

    {"type": "begin", "profile": ..., "changes": [...], ...}  the plan, in order
    {"type": "save", "step": 0, "original": {...}}            before step 0 writes
    {"type": "done", "step": 0, "after": "10"}                 step 0 written, read back
    {"type": "skipped", "step": 1, "reason": "..."}            the host refused, nothing changed
    {"type": "commit"}                                         the profile is active
    {"type": "rollback", "reason": "..."}                      rollback starts
    {"type": "reverted", "step": 0, "found": ..., "restored": ...}
    {"type": "end", "state": "rolled-back"}                    closed

A torn last line (power lost while writing it) is ignored: the action it
announced had not started, since actions wait for the fsync. Every line
carries ``seq`` and ``time``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from dolmen.errors import EnvironmentProblem, InputError
from dolmen.fsutil import fsync_dir
from dolmen.host import Host
from dolmen.paths import state_dir
from dolmen.tune.model import Change


class State(StrEnum):
    """Where a journal stands."""

    APPLYING = "applying"  # begun, not committed: interrupted unless its process still runs
    ACTIVE = "active"  # committed: the profile is in force
    ROLLING_BACK = "rolling-back"  # rollback begun, not finished: interrupted
    CLOSED = "closed"  # rolled back (or recovered) completely


def tune_dir(host: Host) -> Path:
    """dolmen's tuning state for a host: ``<state>/tune`` for the live one; each host tree
    gets its own folder there, so tuning a tree never mixes with the machine's state."""
    base = state_dir() / "tune"
    if host.kind == "live" and str(host.root) == "/":
        return base
    root = str(host.root.resolve())
    digest = hashlib.sha256(root.encode()).hexdigest()[:12]
    return base / "trees" / f"{host.root.name or 'root'}-{digest}"


def now() -> str:
    """UTC time for journal lines."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Journal:
    """An append-only, fsync'd JSON-lines file (see module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seq = sum(1 for _ in _lines(path)) if path.exists() else 0

    @classmethod
    def create(cls, folder: Path, begin: Mapping[str, Any]) -> Journal:
        """A new journal whose first line is ``begin``."""
        journals = folder / "journals"
        journals.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        path = journals / f"{stamp}-{secrets.token_hex(3)}.jsonl"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        fsync_dir(journals)
        j = cls(path)
        j.append({"type": "begin", **begin})
        return j

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one line and make it durable before returning."""
        line = json.dumps({"seq": self._seq, "time": now(), **record}, sort_keys=True)
        with open(self.path, "ab", buffering=0) as f:
            f.write(line.encode() + b"\n")
            os.fsync(f.fileno())
        self._seq += 1

    def view(self) -> JournalView:
        """The journal's records, parsed."""
        return JournalView.read(self.path)


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, "rb") as f:
        for raw in f:
            try:
                rec = json.loads(raw)
            except ValueError:
                return  # a torn last line: see module docstring
            if not isinstance(rec, dict) or not raw.endswith(b"\n"):
                return
            yield rec


@dataclass
class JournalView:
    """What a journal says: the plan, how far apply and rollback got."""

    path: Path
    begin: dict[str, Any]
    changes: list[Change]
    saved: dict[int, dict[str, Any]] = field(default_factory=dict)
    before: dict[int, str | None] = field(default_factory=dict)  # value read before the save
    done: dict[int, dict[str, Any]] = field(default_factory=dict)
    skipped: dict[int, str] = field(default_factory=dict)
    reverted: dict[int, dict[str, Any]] = field(default_factory=dict)
    committed: str | None = None
    rollback: dict[str, Any] | None = None
    ended: str | None = None

    @classmethod
    def read(cls, path: Path) -> JournalView:
        """Parse a journal file; InputError when its first line is not a begin record."""
        records = list(_lines(path))
        if not records or records[0].get("type") != "begin":
            raise InputError("not a dolmen tune journal (no begin record)", path=str(path))
        begin = records[0]
        try:
            changes = [Change.from_json(c) for c in begin.get("changes", [])]
        except (KeyError, ValueError, TypeError) as e:
            raise InputError(f"journal plan is malformed: {e}", path=str(path)) from e
        v = cls(path, begin, changes)
        for r in records[1:]:
            kind, step = r.get("type"), r.get("step")
            if kind == "save" and isinstance(step, int):
                v.saved[step] = dict(r.get("original", {}))
                b = r.get("before")
                v.before[step] = None if b is None else str(b)
            elif kind == "done" and isinstance(step, int):
                v.done[step] = r
            elif kind == "skipped" and isinstance(step, int):
                v.skipped[step] = str(r.get("reason", ""))
            elif kind == "reverted" and isinstance(step, int):
                v.reverted[step] = r
            elif kind == "commit":
                v.committed = str(r.get("time", ""))
            elif kind == "rollback":
                v.rollback = r
            elif kind == "end":
                v.ended = str(r.get("state", "closed"))
        return v

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
        steps = len(self.begin.get("steps", []))
        return f"{len(self.done) + len(self.skipped)} of {steps} steps written"


def journals(folder: Path) -> list[Path]:
    """Journal files, oldest first."""
    d = folder / "journals"
    return sorted(d.glob("*.jsonl")) if d.is_dir() else []


def open_journal(folder: Path) -> JournalView | None:
    """The journal that is not closed (active, or interrupted), if any; the newest wins."""
    for path in reversed(journals(folder)):
        try:
            v = JournalView.read(path)
        except InputError:
            continue
        if v.state is not State.CLOSED:
            return v
    return None


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold ``<folder>/lock`` for the duration: one dolmen tune change at a time per host."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
            raise EnvironmentProblem(
                f"another dolmen tune is changing this host (pid {holder or '?'})",
                hint="wait for it to finish",
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def is_locked(folder: Path) -> bool:
    """Whether a dolmen process holds the lock now (its journal is not interrupted)."""
    path = folder / "lock"
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
