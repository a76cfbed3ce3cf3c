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

Every line carries ``seq``, ``time`` and a chained checksum (``journal_lines``); the
records are checked against each other (``journal_view``). A torn last line (power lost
while writing it) is ignored and cut off before the next append: the action it
announced had not started, since actions wait for the fsync. Anything else damaged
stops every command that relies on the journal, with the file and the line (exit 2).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import secrets
import signal
import threading
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from dolmen.compat import UTC
from dolmen.errors import AuditUnavailable, EnvironmentProblem
from dolmen.fsutil import fsync_dir
from dolmen.host import Host
from dolmen.paths import state_dir
from dolmen.tune.journal_lines import FORMAT, decode, encode
from dolmen.tune.journal_view import JournalView, State


def tune_dir(host: Host) -> Path:
    """dolmen's tuning state for a host: ``<state>/tune`` for the live one; each host tree
    gets its own folder there, so tuning a tree never mixes with the machine's state."""
    return change_dir(host, "tune")


def change_dir(host: Host, kind: str) -> Path:
    """The journals of a change flow (``tune``, ``stack``, ``nccl``...): ``<state>/<kind>``
    for the live host, ``<state>/<kind>/trees/<name>-<digest of its path>`` for a host
    tree. One folder per flow, so a tune profile switch never rolls back another's."""
    base = state_dir() / kind
    if host.kind == "live" and str(host.root) == "/":
        return base
    root = str(host.root.resolve())
    digest = hashlib.sha256(root.encode()).hexdigest()[:12]
    return base / "trees" / f"{host.root.name or 'root'}-{digest}"


def now() -> str:
    """UTC time for journal lines."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class JournalUnwritable(AuditUnavailable):
    """The journal could not be written (a full or read-only state disk): exit 4, as for
    the audit log, since a change dolmen cannot journal is a change it cannot undo."""


class Journal:
    """An append-only, fsync'd JSON-lines file (see module docstring).

    ``records`` mirrors every line made durable, so that when the state disk fills up
    halfway through an apply the engine can still roll back what it wrote, from memory.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        got = decode(path)
        self.records = got.records
        self.fmt = got.fmt
        self._size = got.good_bytes
        self._sum = got.last_sum
        self.lost: str | None = None  # why a best-effort append could not be written

    @classmethod
    def create(cls, folder: Path, begin: Mapping[str, Any]) -> Journal:
        """A new journal whose first line is ``begin``, created whole: a temporary file
        linked into place, so no journal is ever seen empty or without its begin line."""
        journals = folder / "journals"
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        path = journals / f"{stamp}-{secrets.token_hex(3)}.jsonl"
        rec = {"type": "begin", **begin, "format": FORMAT, "seq": 0, "time": now()}
        line, _ = encode(rec, "", FORMAT)
        tmp = journals / f".{path.name}.tmp"
        try:
            journals.mkdir(parents=True, exist_ok=True)
            for old in journals.glob(".*.tmp"):  # left by a process killed here
                old.unlink()
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                _write_all(fd, line, 0)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.link(tmp, path)
            tmp.unlink()
            fsync_dir(journals)
        except OSError as e:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise _unwritable(journals, e) from None
        return cls(path)

    def append(self, record: Mapping[str, Any], *, best_effort: bool = False) -> None:
        """Write one line and make it durable before returning.

        A torn last line (see journal_lines) is cut off first, so the new line never
        lands after a fragment. JournalUnwritable when the disk refuses; with
        ``best_effort`` (a rollback from memory) the record is kept in ``records`` only
        and ``lost`` says why.
        """
        rec = {"seq": len(self.records), "time": now(), **record}
        if self.fmt < 2:
            rec.pop("format", None)
        line, digest = encode(rec, self._sum, self.fmt)
        with _signals_blocked():
            self._write(line, digest, best_effort)

    def _write(self, line: bytes, digest: str, best_effort: bool) -> None:
        try:
            if self.lost is not None:
                raise OSError(errno.EIO, "an earlier line could not be written")
            fd = os.open(self.path, os.O_WRONLY)
            try:
                if os.fstat(fd).st_size != self._size:
                    os.ftruncate(fd, self._size)
                _write_all(fd, line, self._size)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            err = _unwritable(self.path, e)
            if not best_effort:
                raise err from None
            self.lost = self.lost or err.message
        else:
            self._size += len(line)
        self._sum = digest
        self.records.append(json.loads(line))

    def view(self) -> JournalView:
        """The journal's records (as written, or as kept in memory), checked."""
        return JournalView.from_records(self.path, self.records)


@contextlib.contextmanager
def _signals_blocked() -> Iterator[None]:
    """SIGINT/SIGTERM wait while a line is written and mirrored in memory: an exception
    raised between the two (interrupt.py) would make the next line repeat a ``seq``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _write_all(fd: int, data: bytes, offset: int) -> None:
    """pwrite until all of ``data`` is on disk: a full disk writes short before it fails."""
    while data:
        n = os.pwrite(fd, data, offset)
        data, offset = data[n:], offset + n


def _unwritable(path: Path, e: OSError) -> JournalUnwritable:
    return JournalUnwritable(
        f"cannot write the tune journal {path}: {e.strerror or e}",
        hint="free space on the state disk or make it writable ($DOLMEN_STATE_DIR, "
        "default /var/lib/dolmen); then `dolmen tune status`",
    )


def journals(folder: Path) -> list[Path]:
    """Journal files, oldest first."""
    d = folder / "journals"
    return sorted(d.glob("*.jsonl")) if d.is_dir() else []


def open_journal(folder: Path) -> JournalView | None:
    """The journal that is not closed (active, or interrupted), if any; the newest wins.

    A journal that cannot be read is an error (InputError with file and line), not a
    journal to skip: skipping it would say "no profile active" while the host is tuned.
    """
    for path in reversed(journals(folder)):
        v = JournalView.read(path)
        if v.state is not State.CLOSED:
            return v
    return None


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold ``<folder>/lock`` for the duration: one dolmen tune change at a time per host."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as e:
        raise _unwritable(folder / "lock", e) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
            raise EnvironmentProblem(
                f"another dolmen tune is changing this host (pid {holder or '?'})",
                hint="wait for it to finish",
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # the pid is a courtesy for the message above; the flock is the lock
        yield
    finally:
        os.close(fd)


def is_locked(folder: Path) -> bool:
    """Whether a dolmen process holds the lock now (its journal is not interrupted)."""
    path = folder / "lock"
    if not path.exists():
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        raise EnvironmentProblem(
            f"cannot read the tune lock {path}: {e.strerror or e}",
            hint="dolmen's state is root's: run it with sudo",
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
