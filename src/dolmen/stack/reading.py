"""What the component builders read: the host, its package database, its facts."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from dolmen.facts import FactError, FactStore
from dolmen.host import Host
from dolmen.stack import sources as src
from dolmen.stack.model import Component, FileHash, Package
from dolmen.stack.packages import PackageDb

_APT_LIKE = ("debian", "ubuntu")
_DNF_LIKE = ("rhel", "fedora", "centos", "rocky", "almalinux", "ol", "amzn")


class Ctx:
    """What every component builder reads: the host, its package database, its facts."""

    def __init__(self, host: Host, db: PackageDb, manager: str, facts: Mapping[str, Any]):
        self.host, self.db, self.manager, self.facts = host, db, manager, facts

    def fact(self, subsystem: str, name: str) -> Any:
        return getattr(self.facts[subsystem], name, None)

    def unread(self, subsystem: str, key: str) -> str:
        f = self.facts[subsystem]
        if isinstance(f, Unread):
            return f.reason
        return str(getattr(f, "unread", {}).get(key, "")) or f"missing: no {key}"

    def packages(self, kind: str) -> tuple[Package, ...]:
        out: dict[str, Package] = {}
        for pat in src.compiled(kind, self.manager):
            out |= {p.name: p for p in self.db.matching(pat)}
        return tuple(out[n] for n in sorted(out))

    def primary(self, kind: str) -> Package | None:
        pats = src.compiled(kind, self.manager)
        hits = self.db.matching(pats[0]) if pats else ()
        return hits[-1] if hits else None

    def package_reason(self, kind: str) -> str:
        if self.db.manager is None:  # the whole story is in the lock's notes
            return self.db.reason.split(" (", 1)[0]
        return f"missing: no {kind} package in {self.db.source}"

    def run(self, argv: list[str], parse: Callable[[str], Any]) -> tuple[Any, str]:
        res = self.host.run(argv)
        if not res.ok:
            return None, res.failure()
        value = parse(res.stdout)
        return value, "" if value is not None else f"malformed: {' '.join(argv)} output"

    def hashed(self, *paths: str | None) -> tuple[FileHash, ...]:
        out = []
        for p in paths:
            if p and (h := file_hash(self.host, p)) is not None:
                out.append(h)
        return tuple(out)


class Unread:
    """Facts that could not be collected: every field reads None, with one reason."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __getattr__(self, name: str) -> Any:
        return None


def facts_of(store: FactStore, name: str) -> Any:
    try:
        return store.get(name)
    except FactError as e:
        return Unread(f"unreadable: {name} facts: {e}")


def manager_of(dist: Any) -> str | None:
    names = {getattr(dist, "id", None), *(getattr(dist, "id_like", ()) or ())}
    if names & set(_APT_LIKE):
        return "apt"
    return "dnf" if names & set(_DNF_LIKE) else None


def file_hash(host: Host, path: str) -> FileHash | None:
    """SHA-256 of a host file (streamed; links followed inside the host), or None."""
    rel = path.lstrip("/")
    digest = hashlib.sha256()
    try:
        for chunk in host.read_chunks(rel):
            digest.update(chunk)
    except (OSError, ValueError):
        return None
    return FileHash("/" + rel, digest.hexdigest())


def unknown(cid: str, kind: str, reasons: Iterable[str], **kw: Any) -> Component:
    """An unknown component. Its reason leads with ``missing`` only when every source
    vouches for absence; any source not read or not recorded leads instead, so the diff
    says "unknown here", never "missing", for a host that merely did not show it."""
    why = [r for r in dict.fromkeys(reasons) if r]
    why.sort(key=lambda r: r.startswith("missing"))  # stable: the unvouched ones first
    return Component(cid, kind, None, reason="; ".join(why) or "unreadable: no source", **kw)
