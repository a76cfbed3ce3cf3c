"""The writer: appends events to the chain, durably, one process at a time.

One append, under an exclusive ``flock`` on ``<log>.head``:

1. open the active file; a last line without its newline is a torn write (a
   crash before fsync returned, so no caller was told it succeeded): it is moved
   to ``<log>.torn``, cut off, and an ``audit.recover`` event says so;
2. read the last event (sequence, hash): the chain continues from it, across a
   rotation from the last rotated segment; a log shorter than the head record says
   lost committed events, so the writer refuses (fail closed);
3. rotate when the active file reached ``rotate_bytes`` or its first event is older
   than ``rotate_seconds``;
4. write every line of the batch in one write(), fdatasync, then rewrite the head
   record. The head may lag the log after a crash, never lead it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from dolmen.audit.event import CHECKPOINT_ACTION, GENESIS, AuditEvent, LineError, parse_line, seal
from dolmen.audit.segments import (
    HeadRecord,
    encode_head,
    first_line,
    head_path,
    last_line,
    last_newline,
    parse_head,
    rotated_name,
    segments,
    torn_path,
)
from dolmen.compat import UTC
from dolmen.errors import AuditUnavailable
from dolmen.fsutil import fsync_dir, not_regular, write_cause

LOCK_TIMEOUT = 30.0
# (sequence, hash of the event at that sequence) -> the checkpoint event to append after it
CheckpointMaker = Callable[[int, str], AuditEvent]
RecoverMaker = Callable[[dict[str, object]], AuditEvent]


@dataclass
class AppendResult:
    """What one append wrote, and what went wrong without losing events (checkpoints)."""

    events: list[AuditEvent] = field(default_factory=list)
    checkpoints: list[AuditEvent] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class AuditLog:
    """The writer of one log file and its rotated segments."""

    def __init__(
        self,
        path: Path,
        *,
        rotate_bytes: int = 0,
        rotate_seconds: float = 0.0,
        lock_timeout: float = LOCK_TIMEOUT,
    ) -> None:
        self.path = path
        self.rotate_bytes = rotate_bytes
        self.rotate_seconds = rotate_seconds
        self.lock_timeout = lock_timeout

    def append(
        self,
        events: Sequence[AuditEvent],
        *,
        checkpoint_every: int = 0,
        make_checkpoint: CheckpointMaker | None = None,
        make_recover: RecoverMaker | None = None,
        checkpoint_now: bool = False,
    ) -> AppendResult:
        """Seal and durably append ``events``; raise AuditUnavailable when it cannot.

        After any event whose sequence is a multiple of ``checkpoint_every``, the
        checkpoint ``make_checkpoint`` returns is appended in the same write. A failing
        periodic checkpoint is a warning: the events it would have covered are committed
        anyway. ``checkpoint_now`` appends one after the batch, and its failure raises.
        """
        odd = not_regular((self.path, head_path(self.path), torn_path(self.path)))
        if odd:  # a FIFO's fdatasync says "Invalid argument", its pread "Illegal seek"
            path, kind = odd
            which = "it" if path == self.path else f"{path.name} beside it"
            raise AuditUnavailable(
                f"cannot write the audit log {self.path}: {which} is {kind}, not a regular file",
                hint="move it aside (dolmen makes the log, its .head and .torn files), or set "
                "[audit] path in dolmen.toml to a file of its own",
            )
        try:
            with self.locked() as head_fd:
                return self._append_locked(
                    head_fd, events, checkpoint_every, make_checkpoint, make_recover, checkpoint_now
                )
        except OSError as e:
            raise unavailable(self.path, e) from e

    @contextlib.contextmanager
    def locked(self) -> Iterator[int]:
        """Hold the log's exclusive lock; yields the open head file."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o750)
        fd = os.open(head_path(self.path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o640)
        try:
            deadline = time.monotonic() + self.lock_timeout
            delay = 0.0005
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise AuditUnavailable(
                            f"the audit log {self.path} stayed locked for {self.lock_timeout:g} s",
                            hint=f"another dolmen process holds {head_path(self.path)}; "
                            "find it with `fuser -v` and let it finish",
                        ) from None
                    time.sleep(delay)
                    delay = min(delay * 2, 0.01)
            yield fd
        finally:
            os.close(fd)  # closing releases the flock

    def _append_locked(
        self,
        head_fd: int,
        events: Sequence[AuditEvent],
        every: int,
        make_checkpoint: CheckpointMaker | None,
        make_recover: RecoverMaker | None,
        checkpoint_now: bool = False,
    ) -> AppendResult:
        result = AppendResult()
        fd = self._open_active()
        try:
            size = os.fstat(fd).st_size
            size, torn = self._cut_torn(fd, size)
            chain = _Chain(*self._last_event(fd, size))
            recorded = parse_head(os.pread(head_fd, 128, 0))
            if recorded is not None and recorded.sequence > chain.sequence:
                raise AuditUnavailable(
                    f"the audit log {self.path} ends at event {chain.sequence} but event "
                    f"{recorded.sequence} was committed: events were removed",
                    hint="run `dolmen audit verify`, keep the log as evidence, and move the "
                    "log folder aside to start a new chain",
                )
            if size and self._due_rotation(size):
                fd = self._rotate(fd)
                size = 0
            if torn is not None:
                result.warnings.append(str(torn["message"]))
                if make_recover is not None:
                    chain.add(make_recover(torn))  # before the caller's events, not among them
            for pending in events:
                result.events.append(chain.add(pending))
                due = every and chain.sequence % every == 0
                if due and make_checkpoint is not None and pending.action != CHECKPOINT_ACTION:
                    try:
                        cp = make_checkpoint(chain.sequence, chain.hash)
                    except Exception as e:  # the events are still committed; say so loudly
                        result.warnings.append(
                            f"periodic checkpoint after {chain.sequence} failed: {e}"
                        )
                        continue
                    result.checkpoints.append(chain.add(cp))
            if checkpoint_now and make_checkpoint is not None:
                result.checkpoints.append(chain.add(make_checkpoint(chain.sequence, chain.hash)))
            if not chain.lines:
                return result
            try:
                _write_all(fd, b"".join(chain.lines))
                os.fdatasync(fd)
            except OSError:
                # A short write (disk full) or a failed flush: take the partial lines back
                # so the log ends on a committed event; the caller is told it failed.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)
                raise
            if size == 0:
                fsync_dir(self.path.parent)  # a new file's name must survive a crash too
            os.pwrite(head_fd, encode_head(HeadRecord(chain.sequence, chain.hash)), 0)
        finally:
            os.close(fd)
        return result

    def _open_active(self) -> int:
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        return os.open(self.path, flags, 0o640)

    def _cut_torn(self, fd: int, size: int) -> tuple[int, dict[str, object] | None]:
        """Move a torn last line aside; returns the new size and what was done."""
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return size, None
        keep = last_newline(fd, size) + 1
        fragment = os.pread(fd, size - keep, keep)
        aside = torn_path(self.path)
        note = {
            "found_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "log": str(self.path),
            "offset": keep,
            "bytes": len(fragment),
        }
        tfd = os.open(aside, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o640)
        try:
            _write_all(tfd, json.dumps(note).encode() + b"\n" + fragment + b"\n")
            os.fsync(tfd)
        finally:
            os.close(tfd)
        os.ftruncate(fd, keep)
        os.fsync(fd)
        message = (
            f"audit log {self.path}: a torn last line ({len(fragment)} bytes at offset {keep}, "
            f"an append that never completed) was moved to {aside}"
        )
        return keep, {**note, "kept_in": str(aside), "message": message}

    def _last_event(self, fd: int, size: int) -> tuple[int, str]:
        """Sequence and hash to chain from: the active file's last event, else the last
        rotated segment's, else the genesis."""
        if size:
            line, _ = last_line(fd, size)
            return self._head_of(line, self.path)
        rotated = [p for p in segments(self.path) if p != self.path]
        if not rotated:
            return 0, GENESIS
        with open(rotated[-1], "rb") as f:
            rsize = os.fstat(f.fileno()).st_size
            line, _ = last_line(f.fileno(), rsize)
        return self._head_of(line, rotated[-1])

    def _head_of(self, line: bytes, where: Path) -> tuple[int, str]:
        try:
            event = parse_line(line)
        except LineError as e:
            raise AuditUnavailable(
                f"the last event of the audit log {where} is unreadable ({e}); "
                "the chain cannot continue",
                hint="run `dolmen audit verify`, then move the log folder aside",
            ) from e
        assert event.sequence is not None and event.hash is not None
        return event.sequence, event.hash

    def _due_rotation(self, size: int) -> bool:
        if self.rotate_bytes and size >= self.rotate_bytes:
            return True
        if not self.rotate_seconds:
            return False
        try:
            first = parse_line(first_line(self.path))
            started = datetime.strptime(first.timestamp, "%Y-%m-%dT%H:%M:%S.%fZ")
        except (LineError, ValueError):
            return False
        age = datetime.now(UTC).replace(tzinfo=None) - started
        return age.total_seconds() >= self.rotate_seconds

    def _rotate(self, fd: int) -> int:
        try:
            first = parse_line(first_line(self.path))
        except LineError as e:
            raise AuditUnavailable(
                f"cannot rotate the audit log {self.path}: its first line is unreadable ({e})",
                hint="run `dolmen audit verify`",
            ) from e
        assert first.sequence is not None
        target = rotated_name(self.path, first.sequence)
        if target.exists():
            raise OSError(errno.EEXIST, f"rotated segment {target} already exists")
        os.rename(self.path, target)
        fsync_dir(self.path.parent)
        os.close(fd)
        return self._open_active()


def unavailable(path: Path, e: OSError) -> AuditUnavailable:
    """The one-line error for a log that cannot be written: its cause in the words of every
    failed write (``fsutil.write_cause``), with a hint that fits the cause."""
    reason, _ = write_cause(e)
    if e.errno == errno.ENOSPC:
        hint = f"free space on the file system of {path.parent}"
    elif e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        hint = f"run as root, or make {path.parent} writable by this user"
    else:
        hint = "set [audit] path in dolmen.toml to a writable place"
    hint += " (or, to allow changes without an audit trail, set [audit] fail_open = true)"
    return AuditUnavailable(f"cannot write the audit log {path} ({reason})", hint=hint)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class _Chain:
    """The head of the chain while a batch is sealed, and the lines it makes."""

    def __init__(self, sequence: int, digest: str) -> None:
        self.sequence, self.hash = sequence, digest
        self.lines: list[bytes] = []

    def add(self, event: AuditEvent) -> AuditEvent:
        sealed, line = seal(event, self.hash, self.sequence + 1)
        assert sealed.sequence is not None and sealed.hash is not None
        self.sequence, self.hash = sealed.sequence, sealed.hash
        self.lines.append(line)
        return sealed
