"""What a manifest records of one file, and what a verify finds changed.

An ``Entry`` is one line of the manifest. ``dev``, ``ino``, ``size``, ``mtime_ns`` and
``ctime_ns`` are what the incremental verify trusts: the kernel sets ``ctime`` on every
write, chmod, chown, rename and link, and user space cannot set it back (utimensat sets
atime and mtime only), so a file whose five values are unchanged has not been written
since it was hashed. A NamedTuple, not a dataclass: a manifest holds tens of thousands.
"""

from __future__ import annotations

import contextlib
import gc
import stat
from collections.abc import Iterator
from itertools import repeat
from typing import NamedTuple

MAX_TARGET = 4096  # PATH_MAX: a link target longer than this is not one Linux made

TYPES = {
    stat.S_IFREG: "file",
    stat.S_IFDIR: "dir",
    stat.S_IFLNK: "symlink",
    stat.S_IFIFO: "fifo",
    stat.S_IFSOCK: "socket",
    stat.S_IFCHR: "char",
    stat.S_IFBLK: "block",
}


class Entry(NamedTuple):
    """One file: its host path (with the leading slash), kind, metadata and content."""

    path: str
    type: str  # file | dir | symlink | fifo | socket | char | block
    mode: int  # permission and special bits (S_IMODE)
    uid: int
    gid: int
    size: int
    sha256: str | None  # regular files; None for every other type
    target: str | None  # symbolic links: the target as stored
    dev: int
    ino: int
    nlink: int
    mtime_ns: int
    ctime_ns: int

    def to_row(self) -> list[object]:
        """The manifest line of this entry: its fields in order (``COLUMNS``)."""
        return list(self)

    def stamp(self) -> tuple[int, int, int, int, int]:
        """What the incremental verify compares: (dev, inode, size, mtime, ctime)."""
        return (self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns)


COLUMNS = Entry._fields
_WIDTH = len(COLUMNS)
_KINDS = frozenset(TYPES.values())
_HEX = frozenset("0123456789abcdef")
_DIGESTS = {(True, str), (False, type(None))}
_TARGETS = _DIGESTS


def entries_from_rows(rows: list[object]) -> dict[str, Entry]:
    """Entries by path from manifest lines; ValueError when one is not an entry.

    The manifest's signature already vouches for its writer; these checks keep a writer's
    bug (or a key that signed junk) from reaching the comparison as a wrong type. They run
    a column at a time in C (``zip``, ``map``, ``set``): a row at a time in Python was the
    largest part of an incremental verify."""
    if not rows:
        return {}
    if set(map(type, rows)) != {list} or set(map(len, rows)) != {_WIDTH}:  # type: ignore[arg-type]
        raise ValueError(f"an entry is a list of {_WIDTH} fields")
    cols = list(zip(*rows))
    paths, kinds, digests, targets = cols[0], cols[1], cols[6], cols[7]
    if set(map(type, paths)) != {str} or not all(map(str.startswith, paths, repeat("/"))):
        raise ValueError("every path is absolute")
    if "\0" in "".join(paths) or len(set(paths)) != len(paths):
        raise ValueError("a path holds a NUL byte or is repeated")
    if not set(kinds) <= _KINDS:
        raise ValueError(f"unknown types {sorted(map(str, set(kinds) - _KINDS))}")
    for col in (*cols[2:6], *cols[8:]):
        if set(map(type, col)) != {int} or min(col) < 0:
            raise ValueError("mode, uid, gid, size, dev, ino, nlink and times are integers")
    if not set(zip(map("file".__eq__, kinds), map(type, digests))) <= _DIGESTS:
        raise ValueError("a file has a sha256, nothing else has")
    hexes = [d for d in digests if d is not None]
    if (hexes and set(map(len, hexes)) != {64}) or not set("".join(hexes)) <= _HEX:
        raise ValueError("a sha256 is 64 hex digits")
    if not set(zip(map("symlink".__eq__, kinds), map(type, targets))) <= _TARGETS:
        raise ValueError("a symbolic link has a target, nothing else has")
    if max(map(len, (t for t in targets if t is not None)), default=0) > MAX_TARGET:
        raise ValueError("a link target is longer than PATH_MAX")
    return dict(zip(paths, map(Entry._make, rows)))  # type: ignore[arg-type]


class Change(NamedTuple):
    """One difference a verify found: the path, its kind and the two values in words."""

    path: str
    kind: str  # added | removed | content | type | mode | owner | target | hardlink | kernel
    before: str
    after: str

    def line(self) -> str:
        """The change in one line, as the terminal shows it."""
        if self.kind == "added":
            return f"added     {self.path} ({self.after})"
        if self.kind == "removed":
            return f"removed   {self.path} (was {self.before})"
        return f"{self.kind:<9} {self.path}: {self.before} -> {self.after}"

    def to_json(self) -> dict[str, str]:
        """The change as ``--json`` prints it."""
        return {"path": self.path, "kind": self.kind, "before": self.before, "after": self.after}


class Unread(NamedTuple):
    """A file a seal or a verify could not read, and why (a verify cannot vouch for it)."""

    path: str
    reason: str


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic collector paused: parsing or scanning 20,000 entries makes only acyclic
    tuples and lists, yet each 700 of them would start a collection (a fifth of the time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
