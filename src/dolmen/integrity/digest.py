"""Describe one file from its ``lstat``, and hash regular files from the inode the walk
saw: streamed through a per-thread 1 MiB buffer on the bounded pool (scan.py)."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterable
from hashlib import sha256

from dolmen.integrity.model import TYPES, Entry, Unread
from dolmen.integrity.pool import parallel_map

CHUNK = 1 << 20
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


def entry_of(path: str, st: os.stat_result, digest: str | None, target: str | None) -> Entry:
    return Entry(
        path,
        TYPES.get(stat.S_IFMT(st.st_mode), "other"),
        stat.S_IMODE(st.st_mode),
        st.st_uid,
        st.st_gid,
        st.st_size,
        digest,
        target,
        st.st_dev,
        st.st_ino,
        st.st_nlink,
        st.st_mtime_ns,
        st.st_ctime_ns,
    )


_local = threading.local()


def hash_all(
    todo: list[tuple[str, str, os.stat_result, bool]], workers: int
) -> Iterable[tuple[str, Entry | Unread]]:
    if len(todo) < 64 or workers < 2:  # a pool costs more than it gives for a handful
        return [_hash_one(job) for job in todo]
    # Batches, not one task a file: the executor's per-task cost (a future, a lock, a
    # queue round trip) would be most of the work for a 4 KiB module.
    size = max(16, len(todo) // (workers * 8))
    batches = [todo[i : i + size] for i in range(0, len(todo), size)]
    return [r for batch in parallel_map(_hash_batch, batches, workers) for r in batch]


def _hash_batch(
    jobs: list[tuple[str, str, os.stat_result, bool]],
) -> list[tuple[str, Entry | Unread]]:
    return [_hash_one(job) for job in jobs]


def _hash_one(job: tuple[str, str, os.stat_result, bool]) -> tuple[str, Entry | Unread]:
    """The entry of one regular file, hashed from the inode the walk saw; a file swapped
    or written while it is read is reported, not recorded half-old."""
    path, real, seen, volatile = job
    buf = getattr(_local, "buf", None)
    if buf is None:
        buf = _local.buf = bytearray(CHUNK)
    view = memoryview(buf)
    try:
        fd = os.open(real, _OPEN)
    except OSError as e:
        return path, Unread(path, why(e))
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino) or not stat.S_ISREG(st.st_mode):
            return path, Unread(path, "replaced while it was read; verify again")
        h, total = sha256(), 0
        while n := os.readv(fd, [buf]):
            h.update(view[:n])
            total += n
        after = os.fstat(fd)
    except OSError as e:
        return path, Unread(path, why(e))
    finally:
        os.close(fd)
    if not volatile and (after.st_size, after.st_mtime_ns, after.st_ctime_ns) != (
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
    ):
        return path, Unread(path, "written while it was read; verify again")
    entry = entry_of(path, st, h.hexdigest(), None)
    if volatile:  # procfs: stat shows size 0 and times of the inode, not of the content
        entry = entry._replace(size=total, dev=0, ino=0, mtime_ns=0, ctime_ns=0)
    return path, entry


def why(e: OSError) -> str:
    if isinstance(e, PermissionError):
        return "insufficient permissions: " + (e.strerror or "permission denied")
    return "unreadable: " + (e.strerror or str(e))
