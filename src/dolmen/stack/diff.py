"""Every drift between a lock and a host: ``dolmen stack diff`` and the ``stack.lock`` check.

Per component id, one of

- ``same``: both show it, with the same version, details, package versions and file hashes;
- ``changed``: both show it and something differs (each difference is one line);
- ``missing``: the lock has it, and this host vouches it has none (its sources were read);
- ``unknown-here``: the lock has it, and this host does not show it (a source unreadable or
  not recorded): undecided, never "same";
- ``extra``: this host shows it and the lock does not (absent there, or unknown there).

A component unknown in both is ``same``. Package versions are compared only where this
host's package database was read; a file the lock hashed and this host could not read
is a note, not a drift (a bundle may not carry ``/usr/include``).

Exit codes of ``stack diff``: 0 no drift, 1 a drift (changed, missing, extra), 2 only
``unknown-here`` (could not decide), or a bad lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dolmen.stack.model import Component, Lock

DRIFTS = ("changed", "missing", "extra", "unknown-here")
SIGNATURE = ("signer", "sig_hashalgo", "signature")  # the module's signature details


@dataclass(frozen=True)
class Drift:
    """How one component of the lock compares with this host."""

    id: str
    kind: str
    status: str  # same | one of DRIFTS
    locked: str | None  # the version in the lock (None: unknown or not in it)
    here: str | None  # the version on this host
    differences: tuple[str, ...] = ()  # for changed: one line per field
    reason: str = ""  # for unknown-here, missing: why this host does not show it
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """A plain dict for --json."""
        return {
            "id": self.id,
            "kind": self.kind,
            "status": self.status,
            "locked": self.locked,
            "here": self.here,
            "differences": list(self.differences),
            "reason": self.reason,
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class StackDiff:
    """Every component's comparison, lock order first, then what only this host has."""

    lock_host: str
    host: str
    entries: tuple[Drift, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def count(self, status: str) -> int:
        """How many entries have ``status``."""
        return sum(1 for e in self.entries if e.status == status)

    @property
    def drifted(self) -> tuple[Drift, ...]:
        """The entries that are not ``same``."""
        return tuple(e for e in self.entries if e.status != "same")

    @property
    def exit_code(self) -> int:
        """0 no drift, 1 a drift, 2 only undecided components (module docstring)."""
        if any(e.status in ("changed", "missing", "extra") for e in self.entries):
            return 1
        return 2 if self.count("unknown-here") else 0

    def to_json(self) -> dict[str, Any]:
        """The ``dolmen.stack.diff/1`` document."""
        return {
            "schema": "dolmen.stack.diff/1",
            "lock_host": self.lock_host,
            "host": self.host,
            "counts": {s: self.count(s) for s in ("same", *DRIFTS)},
            "exit_code": self.exit_code,
            "entries": [e.to_json() for e in self.entries],
            "notes": list(self.notes),
        }


def diff(lock: Lock, here: Lock) -> StackDiff:
    """Compare ``here`` (``observe`` of this host) with ``lock``."""
    now = here.by_id()
    compare_packages = here.package_manager is not None and not here.notes
    out = [_one(c, now.get(c.id), compare_packages) for c in lock.components]
    locked = {c.id for c in lock.components}
    out += [_extra(c) for c in here.components if c.id not in locked and c.known]
    notes: list[str] = []
    for key in ("distribution", "distribution_version", "architecture"):
        a, b = getattr(lock, key), getattr(here, key)
        if a and b and a != b:
            notes.append(f"{key}: {a} in the lock, {b} here")
    if not compare_packages:
        notes.append(
            "package versions not compared: " + ("; ".join(here.notes) or "no package manager")
        )
    return StackDiff(lock.host, here.host, tuple(out), tuple(notes))


def _extra(c: Component) -> Drift:
    return Drift(c.id, c.kind, "extra", None, c.version, (f"not in the lock; here {c.version}",))


def _one(want: Component, got: Component | None, packages: bool) -> Drift:
    if got is None:
        if not want.known:
            return Drift(
                want.id,
                want.kind,
                "same",
                None,
                None,
                notes=("unknown in the lock, not seen here",),
            )
        return Drift(
            want.id,
            want.kind,
            "unknown-here",
            want.version,
            None,
            reason="this host shows no such component",
        )
    if not want.known:
        if got.known:
            return Drift(
                want.id,
                want.kind,
                "extra",
                None,
                got.version,
                (f"unknown in the lock ({want.reason}); here {got.version}",),
            )
        return Drift(want.id, want.kind, "same", None, None)
    if not got.known:
        status = "missing" if got.vouched_missing else "unknown-here"
        return Drift(want.id, want.kind, status, want.version, None, reason=got.reason)
    diffs, notes = differences(want, got, packages)
    status = "changed" if diffs else "same"
    return Drift(
        want.id, want.kind, status, want.version, got.version, tuple(diffs), notes=tuple(notes)
    )


def differences(
    want: Component, got: Component, packages: bool = True
) -> tuple[list[str], list[str]]:
    """(differences, notes) between a locked component and this host's."""
    diffs: list[str] = []
    notes: list[str] = []
    if want.version != got.version:
        diffs.append(f"version {want.version} -> {got.version}")
    skip = {"default"}  # which toolkit usr/local/cuda points at is not the toolkit's own
    if got.details.get("signature", "").startswith("unknown"):  # modinfo not read here
        skip |= set(SIGNATURE)
        notes.append(f"module signature not compared: {got.details['signature']}")
    for k in sorted(set(want.details) | set(got.details)):
        a, b = want.details.get(k), got.details.get(k)
        if a != b and k not in skip:
            diffs.append(f"{k} {a or '(none)'} -> {b or '(none)'}")
    if packages:
        pa = {p.name: p.version for p in want.packages}
        pb = {p.name: p.version for p in got.packages}
        for name in sorted(set(pa) | set(pb)):
            if pa.get(name) != pb.get(name):
                a, b = pa.get(name) or "(not installed)", pb.get(name) or "(not installed)"
                diffs.append(f"package {name} {a} -> {b}")
    fa = {f.path: f.sha256 for f in want.files}
    fb = {f.path: f.sha256 for f in got.files}
    for path in sorted(fa):
        if path not in fb:
            notes.append(f"file {path} not read here")
        elif fa[path] != fb[path]:
            diffs.append(f"file {path} sha256 {fa[path][:12]} -> {fb[path][:12]}")
    return diffs, notes
