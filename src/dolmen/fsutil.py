"""Durable file writes for dolmen's own files and the hosts it changes."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path


def atomic_write(target: Path, payload: bytes, *, mode: int | None = None) -> None:
    """Replace ``target`` with ``payload`` atomically and durably.

    A temporary file in the same folder is written, fsync'd, renamed over the
    target, then the folder is fsync'd: readers see the old or the new bytes,
    never a mix, and a power loss after return keeps the new ones. An existing
    file keeps its permission bits unless ``mode`` is given.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            mode = 0o644
    tmp = target.parent / f".{target.name}.dolmen-tmp-{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)


def fsync_dir(folder: Path) -> None:
    """fsync a folder so a rename or unlink in it is durable."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
