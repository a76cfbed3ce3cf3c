"""The first bytes of a block device (or of an image file standing in for one).

A LUKS header is read from the device itself (``crypt.luks2``); on a host tree the
device path holds a regular file with the bytes a snapshot took. Anything else under
that path (a FIFO that would block, a character device that never ends, a socket) is
refused before a byte is read, and nothing past ``size`` is read.
"""

from __future__ import annotations

import errno
import os
import stat

from dolmen.fsutil import NotRegularFile, kind_of
from dolmen.host.base import Host


def read_head(host: Host, rel: str, size: int) -> bytes:
    """Up to ``size`` bytes from the start of block device or regular file ``rel``.

    Raises OSError: FileNotFoundError, PermissionError (a device only root may read),
    ``NotRegularFile`` for anything that is neither a block device nor a regular file.
    """
    path = host.path(rel)
    # O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISBLK(mode) or stat.S_ISREG(mode)):
            raise NotRegularFile(
                errno.EINVAL, f"not a block device ({kind_of(mode)[2:]})", str(path)
            )
        chunks: list[bytes] = []
        got = 0
        while got < size and (data := os.pread(fd, size - got, got)):
            chunks.append(data)
            got += len(data)
        return b"".join(chunks)
    finally:
        os.close(fd)


def kind(host: Host, rel: str) -> str | None:
    """What ``rel`` is, in words (``a block device``, ``a FIFO``), or None when absent.

    PermissionError when a folder on the way may not be searched: that is not absence."""
    try:
        return kind_of(os.stat(host.path(rel)).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return None
