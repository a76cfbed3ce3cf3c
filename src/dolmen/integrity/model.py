"""What a manifest records of one file, and what a verify finds changed.

An ``Entry`` is one line of the manifest. ``dev``, ``ino``, ``size``, ``mtime_ns`` and
``ctime_ns`` are what the incremental verify trusts: the kernel sets ``ctime`` on every
write, chmod, chown, rename and link, and user space cannot set it back (utimensat sets
atime and mtime only), so a file whose five values are unchanged has not been written
since it was hashed. A NamedTuple, not a dataclass: a manifest holds tens of thousands.
"""

from __future__ import annotations

import stat
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

    def to_json(self) -> dict[str, object]:
        """The manifest line of this entry (only the fields its type has)."""
        out: dict[str, object] = {
            "path": self.path,
            "type": self.type,
            "mode": f"{self.mode:04o}",
            "uid": self.uid,
            "gid": self.gid,
            "size": self.size,
        }
        if self.sha256 is not None:
            out["sha256"] = self.sha256
        if self.target is not None:
            out["target"] = self.target
        out |= {"dev": self.dev, "ino": self.ino, "nlink": self.nlink}
        out |= {"mtime_ns": self.mtime_ns, "ctime_ns": self.ctime_ns}
        return out

    @classmethod
    def from_json(cls, d: object) -> Entry:
        """An entry from its manifest line; ValueError (or KeyError, TypeError) when it is
        not one."""
        if not isinstance(d, dict):
            raise ValueError("an entry is not an object")
        path, kind, mode = d["path"], d["type"], d["mode"]
        if not isinstance(path, str) or not path.startswith("/") or "\0" in path:
            raise ValueError(f"bad path {path!r}")
        if kind not in TYPES.values():
            raise ValueError(f"{path}: unknown type {kind!r}")
        if not isinstance(mode, str) or len(mode) > 5 or not mode.isdigit():
            raise ValueError(f"{path}: bad mode {mode!r}")
        digest, target = d.get("sha256"), d.get("target")
        if (kind == "file") != isinstance(digest, str) or (
            isinstance(digest, str) and (len(digest) != 64 or digest.strip("0123456789abcdef"))
        ):
            raise ValueError(f"{path}: a file has a sha256 of 64 hex digits, nothing else has")
        if (kind == "symlink") != isinstance(target, str) or len(target or "") > MAX_TARGET:
            raise ValueError(f"{path}: a symbolic link has a target, nothing else has")
        ints = [d[k] for k in ("uid", "gid", "size", "dev", "ino", "nlink", "mtime_ns", "ctime_ns")]
        if not all(type(v) is int and v >= 0 for v in ints):
            raise ValueError(f"{path}: uid, gid, size, dev, ino, nlink and times are integers")
        return cls(path, kind, int(mode, 8), ints[0], ints[1], ints[2], digest, target, *ints[3:])

    def stamp(self) -> tuple[int, int, int, int, int]:
        """What the incremental verify compares: (dev, inode, size, mtime, ctime)."""
        return (self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns)


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
