"""``compare``: a pure function of two entry maps, one change per kind and path."""

from __future__ import annotations

from dolmen.integrity.compare import compare
from dolmen.integrity.model import Change, Entry

A = "a" * 64
B = "b" * 64


def _file(path: str, **kw: object) -> Entry:
    base = Entry(path, "file", 0o644, 0, 0, 10, A, None, 1, 100, 1, 5, 5)
    return base._replace(**kw)  # type: ignore[arg-type]


def test_times_and_inode_alone_are_not_changes() -> None:
    old = {"/x": _file("/x")}
    assert compare(old, {"/x": _file("/x", ino=999, mtime_ns=9, ctime_ns=9)}) == []


def test_every_kind_is_named() -> None:
    old = {
        "/c": _file("/c"),
        "/m": _file("/m"),
        "/o": _file("/o"),
        "/l": Entry("/l", "symlink", 0o777, 0, 0, 1, None, "t", 1, 3, 1, 0, 0),
        "/t": _file("/t"),
        "/gone": _file("/gone"),
        "/h": _file("/h", ino=7),
        "/d": Entry("/d", "dir", 0o755, 0, 0, 4096, None, None, 1, 8, 2, 0, 0),
    }
    new = {
        "/c": _file("/c", sha256=B, size=11),
        "/m": _file("/m", mode=0o4755),
        "/o": _file("/o", uid=1000),
        "/l": Entry("/l", "symlink", 0o777, 0, 0, 1, None, "u", 1, 3, 1, 0, 0),
        "/t": Entry("/t", "symlink", 0o777, 0, 0, 1, None, "/x", 1, 9, 1, 0, 0),
        "/new": _file("/new", ino=7, nlink=2),
        "/h": _file("/h", ino=7, nlink=2),
        "/d": Entry("/d", "dir", 0o755, 0, 0, 8192, None, None, 1, 8, 5, 9, 9),
    }
    assert compare(old, new) == [
        Change("/c", "content", f"sha256 {A[:16]} (10 bytes)", f"sha256 {B[:16]} (11 bytes)"),
        Change("/gone", "removed", "file, 10 bytes", ""),
        Change("/h", "hardlink", "1 link", "2 links, shared with /new"),
        Change("/l", "target", "t", "u"),
        Change("/m", "mode", "0644", "4755"),
        Change("/new", "added", "", "file, 10 bytes"),
        Change("/o", "owner", "0:0", "1000:0"),
        Change("/t", "type", "file, 10 bytes", "symlink -> /x"),
    ]
