"""The files of one log: rotated segments ``<log>.<first sequence>`` then the active ``<log>``.

A rotated segment is named after the sequence number of its first event, zero
padded to 12 digits, so names sort in chain order and never change once made.
Beside the log: ``<log>.head`` (the lock, and the last committed sequence and
hash) and ``<log>.torn`` (torn last lines found after a crash, kept aside).
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from dolmen.errors import InputError
from dolmen.fsutil import kind_of

SEQ_DIGITS = 12
HEAD_SIZE = 128  # the head record is rewritten in place at offset 0, always this long


def head_path(log: Path) -> Path:
    """The head record and lock file of ``log``."""
    return log.with_name(log.name + ".head")


def torn_path(log: Path) -> Path:
    """Where torn last lines are kept aside."""
    return log.with_name(log.name + ".torn")


def rotated_name(log: Path, first_sequence: int) -> Path:
    """The name a segment takes when it is rotated."""
    return log.with_name(f"{log.name}.{first_sequence:0{SEQ_DIGITS}d}")


def segments(log: Path) -> list[Path]:
    """Rotated segments in chain order, then the active file when it exists.

    InputError for a segment that is not a regular file: a FIFO would block every reader
    for ever, and a device (``--log /dev/zero``) would stream without end."""
    pat = re.compile(re.escape(log.name) + r"\.(\d{" + str(SEQ_DIGITS) + r"})$")
    try:
        names = os.listdir(log.parent)
    except OSError:
        names = []
    found = sorted((int(m.group(1)), n) for n in names if (m := pat.match(n)))
    files = [log.parent / n for _, n in found]
    if log.exists():
        files.append(log)
    for path in files:
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:  # rotated away since the listing: the readers skip it
            continue
        if not stat.S_ISREG(mode):
            raise InputError(
                f"{kind_of(mode)}, not an audit log",
                path=str(path),
                hint="name the log file itself (--log FILE or [audit] path)",
            )
    return files


@dataclass(frozen=True)
class HeadRecord:
    """The last committed event as the writer recorded it (a tripwire for tail truncation)."""

    sequence: int
    hash: str


def encode_head(head: HeadRecord) -> bytes:
    """The fixed-size record written at offset 0 of the head file."""
    text = json.dumps({"sequence": head.sequence, "hash": head.hash}, separators=(",", ":"))
    return text.encode("ascii").ljust(HEAD_SIZE - 1) + b"\n"


def parse_head(data: bytes) -> HeadRecord | None:
    """The head record from the head file's bytes; None when empty or malformed."""
    try:
        obj = json.loads(data.decode("ascii").strip() or "null")
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(obj, dict):
        return None
    seq, digest = obj.get("sequence"), obj.get("hash")
    if isinstance(seq, int) and isinstance(digest, str) and len(digest) == 64:
        return HeadRecord(seq, digest)
    return None


def read_head(log: Path) -> HeadRecord | None:
    """The head record of ``log``; None when the file is absent or unreadable."""
    try:
        return parse_head(head_path(log).read_bytes()[:HEAD_SIZE])
    except OSError:
        return None


def last_newline(fd: int, end: int) -> int:
    """The offset of the last b"\\n" before ``end`` in an open file, or -1 when there is none.

    Reads backwards in growing chunks, so a long line costs more reads, never a whole file.
    """
    chunk = 4096
    stop = end
    while stop > 0:
        start = max(0, stop - chunk)
        cut = os.pread(fd, stop - start, start).rfind(b"\n")
        if cut >= 0:
            return start + cut
        stop = start
        chunk = min(chunk * 4, 1 << 24)
    return -1


def last_line(fd: int, size: int) -> tuple[bytes, int]:
    """The last line of a file whose last byte at ``size`` - 1 is a newline, and its offset."""
    if size == 0:
        return b"", 0
    start = last_newline(fd, size - 1) + 1
    return os.pread(fd, size - start, start), start


def first_line(path: Path) -> bytes:
    """The first line of a file (b"" when empty or absent)."""
    try:
        with open(path, "rb") as f:
            return f.readline()
    except OSError:
        return b""
