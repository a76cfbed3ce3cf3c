"""Reading the logs ``dolmen logs scan`` is given: streamed, never held whole.

A rotated syslog can be hundreds of MB (one of 184 MB once took 11 GB as one string,
its lines and its events). A log is read in 1 MiB chunks, gzip unpacked as it goes,
and split into the lines ``str.splitlines`` would give (what validate reads from a
bundle), so memory stays bounded whatever the log's size. The first 64 KiB decide
whether it is text at all; a run of NUL bytes, what a crash leaves, is text.
"""

from __future__ import annotations

import io
import os
import stat
import sys
import time
import zlib
from collections.abc import Iterator
from typing import Any, Protocol

from dolmen.errors import InputError
from dolmen.facts.kernel_log.stream import split_lines, text_blocks

MAX_BYTES = 1 << 30  # a kernel log larger than 1 GiB (even gzipped) is not one
_HEAD = 1 << 16  # bytes sampled to tell text from binary


class _Source(Protocol):
    """What a log is read from: a file, stdin, a FIFO or a device (``_Stream``)."""

    def read(self, size: int = -1, /) -> bytes: ...

    def close(self) -> None: ...


class LogInput:
    """An opened log: its first bytes checked as text, the rest streamed line by line."""

    def __init__(self, name: str, where: str, head: bytes, rest: _Rejoined, raw: _Source) -> None:
        self.name = name
        self.where = where
        self._head = head
        self._rest = rest
        self._raw = raw

    def lines(self) -> Iterator[str]:
        """Every line, as ``str.splitlines`` splits the whole text (what validate reads), a
        line longer than ``stream.MAX_LINE`` cut there; InputError when the input goes bad."""
        yield from split_lines(self._chunks())

    def blocks(self) -> Iterator[str]:
        """The same lines in blocks of whole lines (``stream.text_blocks``), for the scanner's
        fast path; InputError when the input goes bad."""
        yield from text_blocks(self._chunks())

    def _chunks(self) -> Iterator[bytes]:
        total = len(self._head)
        yield self._head
        while True:
            try:
                chunk = self._rest.read(1 << 20)
            except (OSError, EOFError, zlib.error) as e:
                raise InputError(f"damaged gzip data ({e})", path=self.where) from None
            if not chunk:
                return
            total += len(chunk)
            if total > MAX_BYTES:
                raise InputError("larger than 1 GiB: not a kernel log", path=self.where)
            yield chunk

    def close(self) -> None:
        if self._raw is not sys.stdin.buffer:
            self._raw.close()


def open_log(name: str) -> LogInput:
    """A log file (``-``: stdin; gzip is unpacked as it is read); InputError when unreadable."""
    raw: _Source
    if name == "-":
        raw, where = sys.stdin.buffer, "<stdin>"
    else:
        where = name
        try:
            raw = _open_path(name)
        except FileNotFoundError:
            raise InputError("no such file", path=name) from None
        except IsADirectoryError:
            raise InputError("is a directory, not a log file", path=name) from None
        except OSError as e:
            raise InputError(f"cannot read it ({e.strerror or e})", path=name) from None
    try:
        head = raw.read(_HEAD)
        rest = _Rejoined(b"", raw)
        if head[:2] == b"\x1f\x8b":
            import gzip

            try:
                unpacked = gzip.GzipFile(mode="rb", fileobj=_Rejoined(head, raw))
                head = unpacked.read(_HEAD)
            except (OSError, EOFError, zlib.error) as e:
                raise InputError(f"damaged gzip data ({e})", path=where) from None
            rest = _Rejoined(b"", unpacked)
        _check_text(head, where)
    except BaseException:
        if raw is not sys.stdin.buffer:
            raw.close()
        raise
    except OSError as e:  # pragma: no cover - a read error after a good open
        raise InputError(f"cannot read it ({e.strerror or e})", path=where) from None
    return LogInput(name, where, head, rest, raw)


FIFO_WAIT = 10.0  # seconds a named FIFO may wait for its writer to open it


def _open_path(name: str) -> _Source:
    """The log at ``name``, opened without blocking: a FIFO no process writes to would hang
    the open for ever (InputError after ``FIFO_WAIT``), and a character device read to its
    end (/dev/kmsg) would wait for the next kernel message."""
    fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(name)
        if stat.S_ISFIFO(mode):
            return _Stream(fd, _first_bytes(fd, name))
        if stat.S_ISCHR(mode):
            return _Stream(fd, b"")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _first_bytes(fd: int, name: str) -> bytes:
    """What a FIFO holds once its writer is there (then reads block as on any pipe). A read
    of a FIFO that no writer has opened yet returns b"", one with a writer and no data yet
    EAGAIN: so a process substitution (``<(dmesg)``) is read, a forgotten FIFO refused."""
    deadline = time.monotonic() + FIFO_WAIT
    while True:
        try:
            data = os.read(fd, _HEAD)
        except BlockingIOError:
            data = None  # the writer is there, its first bytes are not yet
        if data is None or data:
            os.set_blocking(fd, True)
            return data or b""
        if time.monotonic() > deadline:
            raise InputError(
                f"a FIFO no process writes to (waited {FIFO_WAIT:g} s)",
                path=name,
                hint="start the program that writes it first, or pipe the log in: "
                "dmesg | dolmen logs scan -",
            )
        time.sleep(0.05)


class _Stream(io.RawIOBase):
    """A log that is not a regular file: a FIFO (its first bytes already read, then
    blocking reads) or a character device read until it has nothing more now, as
    ``dmesg`` reads /dev/kmsg."""

    def __init__(self, fd: int, first: bytes) -> None:
        super().__init__()
        self._fd = fd
        self._first = first

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1, /) -> bytes:
        if self._first:
            n = len(self._first) if size < 0 else size
            part, self._first = self._first[:n], self._first[n:]
            return part
        while True:
            try:
                return os.read(self._fd, size if size >= 0 else 1 << 20)
            except BlockingIOError:
                return b""  # a device with nothing more now: the end of this log
            except BrokenPipeError:
                continue  # /dev/kmsg: records overwritten under the reader; the next follows

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


class _Rejoined:
    """Bytes already read, then the rest of a stream: a file object for gzip and lines."""

    def __init__(self, head: bytes, stream: Any) -> None:
        self._head = head
        self._stream = stream

    def read(self, size: int = -1) -> bytes:
        if self._head:
            n = len(self._head) if size < 0 else size
            part, self._head = self._head[:n], self._head[n:]
            return part
        data: bytes = self._stream.read(size)
        return data

    def seek(self, offset: int, /) -> int:
        """Streams are read forward only (gzip seeks only to rewind, which a scan never does)."""
        raise OSError(f"cannot seek a log stream to {offset}")


def _check_text(head: bytes, where: str) -> None:
    """InputError when the first bytes are not text. A run of NUL bytes is text: it is what
    a crash leaves in a log file (blocks allocated, never written), and validate reads
    such a log; the rest of the sample must still be text."""
    sample = head.replace(b"\x00", b"").decode("utf-8", errors="replace")
    junk = sum(1 for c in sample if c == "\ufffd" or (c < " " and c not in "\t\n\r\f"))
    if sample and junk > len(sample) // 20:
        raise InputError(
            "binary data, not a text log",
            path=where,
            hint="for a systemd journal file: journalctl --file FILE -k -o short-iso | "
            "dolmen logs scan -",
        )
