"""Walk a manifest's patterns on a host and describe every file: stat, then hash.

The walk lists folders and ``lstat``s their entries, never following a link below the
pattern's own folder (a link is recorded with its target). Hashing streams each file
through a per-thread 1 MiB buffer (no whole-file reads of a 1 GB libcudnn) on a bounded
thread pool: hashlib and ``read`` release the GIL, so the pool overlaps the disk with
the hash on a cold cache and uses every core on a warm one. Files are hashed in inode
order, which keeps a cold read of a freshly installed tree close to sequential.

Given the manifest's entries (``known``), a file whose (dev, inode, size, mtime, ctime)
is unchanged keeps its recorded digest without being read: the incremental verify.
Files of a ``volatile`` set (procfs) are always read. The walk resolves only the
pattern's folders through the ``Host`` (a tree host confines them to its root).
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from dolmen.host import Host
from dolmen.integrity.digest import entry_of, hash_all, why
from dolmen.integrity.model import MAX_TARGET, TYPES, Entry, Unread, paused_gc
from dolmen.integrity.pool import parallel_map
from dolmen.integrity.sets import FileSet

_GLOB = frozenset("*?[")


def default_workers() -> int:
    """Threads for hashing: twice the usable cores (reads wait on the disk), 2 to 16."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(2, min(16, 2 * cores))


@dataclass
class Scan:
    """What a walk found: entries by host path, what it could not read, what it hashed."""

    entries: dict[str, Entry] = field(default_factory=dict)
    unread: list[Unread] = field(default_factory=list)
    hashed: int = 0
    hashed_bytes: int = 0
    trusted: int = 0  # regular files whose digest the incremental verify kept


def scan(
    host: Host,
    sets: Iterable[FileSet],
    *,
    known: Mapping[str, Entry] | None = None,
    workers: int | None = None,
) -> Scan:
    """Describe every file the ``sets`` match on ``host``; see the module docstring."""
    with paused_gc():
        return _scan(host, sets, known, workers)


def _scan(
    host: Host, sets: Iterable[FileSet], known: Mapping[str, Entry] | None, workers: int | None
) -> Scan:
    out = Scan()
    found: dict[str, tuple[str, os.stat_result, bool]] = {}  # path -> (real, lstat, volatile)
    seen = _Seen(known or {}, out.entries, found)
    for s in sets:
        for pattern in s.paths:
            _walk(host, pattern, frozenset(s.exclude), s.volatile, seen, out.unread)
    out.trusted = sum(e.type == "file" for e in out.entries.values())
    todo: list[tuple[str, str, os.stat_result, bool]] = []
    for path, (real, st, volatile) in found.items():
        kind = TYPES.get(stat.S_IFMT(st.st_mode), "other")
        if kind == "file":
            todo.append((path, real, st, volatile))
        elif kind == "symlink":
            try:
                target = os.readlink(real)
            except OSError as e:
                out.unread.append(Unread(path, why(e)))
                continue
            out.entries[path] = entry_of(path, st, None, target[:MAX_TARGET])
        else:
            out.entries[path] = entry_of(path, st, None, None)
    todo.sort(key=lambda job: (job[2].st_dev, job[2].st_ino))
    for path, result in hash_all(todo, workers or default_workers()):
        if isinstance(result, Unread):
            out.unread.append(result)
        else:
            out.entries[path] = result
            out.hashed += 1
            out.hashed_bytes += result.size
    out.unread.sort()
    return out


class _Seen:
    """Where the walk puts what it finds: an entry whose stat matches the manifest goes
    straight to ``entries`` (the recorded entry is the file: same inode, size, mtime and
    ctime mean nothing wrote, chmod'ed, chown'ed or linked it since the seal, as each of
    those sets ctime); anything else to ``found``, to be described afresh."""

    __slots__ = ("entries", "found", "known")

    def __init__(
        self,
        known: Mapping[str, Entry],
        entries: dict[str, Entry],
        found: dict[str, tuple[str, os.stat_result, bool]],
    ) -> None:
        self.known, self.entries, self.found = known, entries, found

    def add(self, at: str, real: str, st: os.stat_result, volatile: bool) -> None:
        if at in self.found or at in self.entries:
            return
        old = self.known.get(at)
        # Indexes of Entry: 5 size, 8 dev, 9 ino, 11 mtime_ns, 12 ctime_ns (the hot loop of
        # an incremental verify: a tuple index is cheaper than a field name).
        if (
            old is not None
            and not volatile
            and old[12] == st.st_ctime_ns
            and old[9] == st.st_ino
            and old[5] == st.st_size
            and old[11] == st.st_mtime_ns
            and old[8] == st.st_dev
        ):
            self.entries[at] = old
        else:
            self.found[at] = (real, st, volatile)


def _walk(
    host: Host,
    pattern: str,
    exclude: frozenset[str],
    volatile: bool,
    seen: _Seen,
    unread: list[Unread],
) -> None:
    parts = pattern.split("/")
    recursive = parts[-1] == "**"
    if recursive:
        parts = parts[:-1]
    bases = [""]
    for part in parts:
        nxt: list[str] = []
        for base in bases:
            if _GLOB.isdisjoint(part):
                names = [part]
            else:
                names = fnmatch.filter(_listdir(host, base, unread), part)
            nxt.extend(f"{base}/{n}" if base else n for n in names if n not in exclude)
        bases = nxt
    for rel in bases:
        real = str(host.path_nofollow(rel))
        try:
            st = os.lstat(real)
        except (FileNotFoundError, NotADirectoryError):
            continue  # a pattern that matches nothing here: the verify sees one appear
        except OSError as e:
            unread.append(Unread("/" + rel, why(e)))
            continue
        seen.add("/" + rel, real, st, volatile)
        if recursive and stat.S_ISDIR(st.st_mode):
            _tree(real, "/" + rel, exclude, volatile, seen, unread)


def _tree(
    real: str,
    path: str,
    exclude: frozenset[str],
    volatile: bool,
    seen: _Seen,
    unread: list[Unread],
) -> None:
    """Everything below a folder, a level at a time; a level of many folders is listed on
    the thread pool (``lstat`` releases the GIL: the kernel's path walks run side by side)."""
    level = [(real, path)]
    workers = default_workers()
    add = seen.add
    while level:
        listed = parallel_map(_list, level, workers if len(level) >= 8 else 1)
        nxt = []
        for (_, shown), result in zip(level, listed):
            if isinstance(result, OSError):
                unread.append(Unread(shown, why(result)))
                continue
            for name, child, st in result:
                if name in exclude:
                    continue
                at = shown + "/" + name
                add(at, child, st, volatile)
                if st.st_mode & 0o170000 == stat.S_IFDIR:
                    nxt.append((child, at))
        level = nxt


def _list(job: tuple[str, str]) -> list[tuple[str, str, os.stat_result]] | OSError:
    try:
        with os.scandir(job[0]) as it:
            return [(e.name, e.path, e.stat(follow_symlinks=False)) for e in it]
    except OSError as e:
        return e


def _listdir(host: Host, rel: str, unread: list[Unread]) -> list[str]:
    try:
        return sorted(os.listdir(host.path(rel)))
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as e:
        unread.append(Unread("/" + rel, why(e)))
        return []
