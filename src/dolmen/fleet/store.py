"""The fleet store: one file per node per collection, written atomically, nothing replaced.

```
<fleet dir>/nodes/<node>/<collection>.json      a node's verdict, the bytes as received
<fleet dir>/nodes/<node>/<collection>-2.json    the same node twice in one collection
<fleet dir>/collections/<collection>.json       what was read from where, what failed, and
                                                what ``fleet validate`` did to each node
<fleet dir>/rejected/<collection>-<n>.bin       bytes that were not a verdict (kept to look at)
<fleet dir>/reports/last.json                   what the last ``fleet report`` saw
```

A collection id is its UTC start time (``20261201T204100.123456Z``), so that names
sort in time order. History is every file kept; a node's latest verdict is the one of
its newest collection (the later ``started`` among duplicates).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from dolmen.compat import UTC
from dolmen.errors import InputError
from dolmen.fleet.doc import NotAVerdict, node_name_problem, parse_verdict
from dolmen.fsutil import (
    atomic_write,
    missing_folders,
    read_regular,
    remove_empty,
    write_failure,
)

MAX_VERDICT_BYTES = 64 << 20  # a verdict is ~200 KB; a store file over this is not one
MANIFEST = "dolmen.fleet.collection/1"


@dataclass(frozen=True)
class Stored:
    """One verdict in the store: node, collection id, file, and the parsed document."""

    node: str
    collection: str
    path: Path
    doc: dict[str, Any]


def collection_id(now: datetime | None = None) -> str:
    """A new collection's id: its UTC time to the microsecond."""
    return (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S.%fZ")


class FleetStore:
    """The store under ``root`` (created on first write; its parent must exist)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    # --- writing -------------------------------------------------------------------------
    def _write(self, path: Path, payload: bytes) -> None:
        if not self.root.parent.is_dir():
            raise InputError(
                f"{self.root}: its folder {self.root.parent} does not exist",
                hint="create it, or give another -o FLEETDIR",
            )
        if self.root.is_symlink() and not self.root.exists():
            raise InputError(
                f"{self.root} is a symbolic link to nothing (or a link loop)",
                hint="give a folder as FLEETDIR",
            )
        if self.root.exists() and not self.root.is_dir():
            raise InputError(f"{self.root} is not a folder", hint="give a folder as FLEETDIR")
        made = missing_folders(path.parent, self.root.parent)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, payload)
        except OSError as e:
            remove_empty(made)  # a full disk left an empty rejected/ (or nodes/<node>/)
            folder = self.root if self.root.is_dir() else self.root.parent
            left = "the verdicts stored before are kept"
            raise write_failure(f"fleet store {path}", e, folder, left) from None

    def add(self, collection: str, node: str, payload: bytes) -> Path:
        """Store a node's verdict bytes in ``collection``; a second one gets ``-2``, ...
        (nothing already stored is ever replaced)."""
        problem = node_name_problem(node)
        if problem:
            raise InputError(problem)
        folder = self.root / "nodes" / node
        path = folder / f"{collection}.json"
        n = 2
        while path.exists():
            path = folder / f"{collection}-{n}.json"
            n += 1
        self._write(path, payload)
        return path

    def reject(self, collection: str, index: int, payload: bytes) -> Path:
        """Keep bytes that were not a verdict, to look at later."""
        path = self.root / "rejected" / f"{collection}-{index}.bin"
        self._write(path, payload)
        return path

    def write_manifest(self, collection: str, body: dict[str, Any]) -> Path:
        """The collection's record: its sources, what became of each, actions taken."""
        path = self.root / "collections" / f"{collection}.json"
        doc = {"schema": MANIFEST, "collection": collection, **body}
        self._write(path, (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode())
        return path

    def write_last_report(self, state: dict[str, Any]) -> None:
        """What this report saw, for the next one's "changed since"."""
        self._write(self.root / "reports" / "last.json", json.dumps(state, indent=1).encode())

    # --- reading -------------------------------------------------------------------------
    def nodes(self) -> list[str]:
        """Every node with at least one file, sorted."""
        folder = self.root / "nodes"
        if not folder.is_dir():
            return []
        return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.is_symlink())

    def history(self, node: str) -> list[Path]:
        """A node's verdict files, oldest first."""
        folder = self.root / "nodes" / node
        if node_name_problem(node) or not folder.is_dir():
            return []
        return sorted(
            (p for p in folder.glob("*.json") if p.is_file() and not p.is_symlink()),
            key=_order,
        )

    def load(self, node: str, path: Path) -> Stored | str:
        """A stored verdict, or why it cannot be read (a reason, never an exception)."""
        try:
            doc = parse_verdict(read_regular(path, MAX_VERDICT_BYTES))
        except OSError as e:
            return f"{path}: unreadable ({e.strerror or e})"
        except NotAVerdict as e:
            return f"{path}: {e}"
        return Stored(node, path.stem.split("-", 1)[0], path, doc)

    def latest(self) -> tuple[dict[str, Stored], list[str]]:
        """Each node's newest readable verdict, and one line per file that could not be read
        (an older file then stands in: the report says which collection it is from)."""
        out: dict[str, Stored] = {}
        problems: list[str] = []
        for node in self.nodes():
            by_collection: dict[str, list[Path]] = {}
            for path in self.history(node):
                by_collection.setdefault(_order(path)[0], []).append(path)
            for collection in sorted(by_collection, reverse=True):
                readable: list[Stored] = []
                for path in by_collection[collection]:
                    got = self.load(node, path)
                    if isinstance(got, str):
                        problems.append(got)
                    else:
                        readable.append(got)
                if readable:
                    out[node] = max(readable, key=lambda s: str(s.doc.get("started") or ""))
                    break
        return out, problems

    def manifests(self) -> list[dict[str, Any]]:
        """Every collection's record, newest first (unreadable ones left out)."""
        folder = self.root / "collections"
        if not folder.is_dir():
            return []
        out = []
        for path in sorted(folder.glob("*.json"), reverse=True):
            try:
                doc = json.loads(read_regular(path, MAX_VERDICT_BYTES))
            except (OSError, ValueError):
                continue
            if isinstance(doc, dict) and doc.get("schema") == MANIFEST:
                out.append(doc)
        return out

    def check_file(self, relative: str, sha256: str) -> str:
        """``intact``, ``changed`` or ``missing``: a stored file against the hash its
        collection's manifest recorded (a file is never rewritten once stored)."""
        path = self.root / relative
        if ".." in Path(relative).parts or not path.is_file():
            return "missing"
        try:
            data = read_regular(path, MAX_VERDICT_BYTES)
        except OSError:
            return "missing"
        return "intact" if hashlib.sha256(data).hexdigest() == sha256 else "changed"

    def last_report(self) -> dict[str, Any] | None:
        """What the last report saw, or None (first report, or an unreadable file)."""
        try:
            doc = json.loads(read_regular(self.root / "reports" / "last.json", 16 << 20))
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None


def _order(path: Path) -> tuple[str, int]:
    stem, _, n = path.stem.partition("-")
    return stem, int(n) if n.isdigit() else 1
