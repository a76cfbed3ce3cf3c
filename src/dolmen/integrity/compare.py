"""What changed between a manifest and the files now: a pure function of two entry maps.

Every difference is named: added and removed files, a changed type or content, a
permission or owner change, a link retargeted, a hard link made or broken (the link
count, and which recorded paths share an inode). Times and inode numbers alone are not
changes: a package manager that rewrites a file with the same bytes and metadata, or a
``touch``, changes nothing a verifier can vouch for (AIDE's ``R`` rule without ``m``,
``c``, ``i``). A folder's size and link count follow its entries and are not compared.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from dolmen.integrity.model import Change, Entry


def compare(old: Mapping[str, Entry], new: Mapping[str, Entry]) -> list[Change]:
    """Every change from ``old`` (the manifest) to ``new`` (the host), sorted by path."""
    out: list[Change] = []
    for path in old.keys() - new.keys():
        out.append(Change(path, "removed", _what(old[path]), ""))
    for path in new.keys() - old.keys():
        out.append(Change(path, "added", "", _what(new[path])))
    old_peers, new_peers = _peers(old), _peers(new)
    # Only entries that differ can hold a change (a link made or broken moves the link
    # count of the file itself). An incremental verify hands back the manifest's own
    # entry for a file whose stat matched: ``is`` settles most paths without a compare.
    for path, a in old.items():
        b = new.get(path)
        if b is None or b is a or b == a:
            continue
        if a.type != b.type:
            out.append(Change(path, "type", _what(a), _what(b)))
            continue
        if a.sha256 != b.sha256:
            out.append(Change(path, "content", _digest(a), _digest(b)))
        if a.target != b.target:
            out.append(Change(path, "target", str(a.target), str(b.target)))
        if a.mode != b.mode:
            out.append(Change(path, "mode", f"{a.mode:04o}", f"{b.mode:04o}"))
        if (a.uid, a.gid) != (b.uid, b.gid):
            out.append(Change(path, "owner", f"{a.uid}:{a.gid}", f"{b.uid}:{b.gid}"))
        if a.type != "dir":
            pa, pb = old_peers.get(path, ()), new_peers.get(path, ())
            if a.nlink != b.nlink or pa != pb:
                out.append(Change(path, "hardlink", _links(a, pa), _links(b, pb)))
    out.sort()
    return out


def _what(e: Entry) -> str:
    if e.type == "file":
        return f"file, {e.size} bytes"
    if e.type == "symlink":
        return f"symlink -> {e.target}"
    return e.type


def _digest(e: Entry) -> str:
    return f"sha256 {(e.sha256 or '')[:16]} ({e.size} bytes)"


def _links(e: Entry, peers: tuple[str, ...]) -> str:
    text = f"{e.nlink} link{'s' if e.nlink != 1 else ''}"
    return text + (f", shared with {', '.join(peers)}" if peers else "")


def _peers(entries: Mapping[str, Entry]) -> dict[str, tuple[str, ...]]:
    """The other recorded paths that share each path's inode (hard links of one file)."""
    by_inode: dict[tuple[int, int], list[str]] = defaultdict(list)
    for e in entries.values():
        if e.type != "dir" and e.nlink > 1 and e.ino:
            by_inode[(e.dev, e.ino)].append(e.path)
    out: dict[str, tuple[str, ...]] = {}
    for paths in by_inode.values():
        if len(paths) > 1:
            for p in paths:
                out[p] = tuple(sorted(q for q in paths if q != p))
    return out
