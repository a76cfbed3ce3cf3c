"""``dolmen stack plan``: the commands that bring this host to a lock, after the rules.

Pure once the host is read: ``build_plan(lock, here, db, sources, kb)``. The lock is
checked against the KB's rules first (``rules.check_lock``); a lock that breaks one is
refused (``LockRefused``, exit 2) before anything is printed. Then every package of the
lock is compared with this host's package database:

- ``ok``: installed at the locked version and held;
- ``hold``: at the locked version, not held (``apt-mark hold``, ``dnf versionlock``);
- ``install``: another version or none (``apt-get install name=version``
  ``--allow-downgrades``; ``dnf install name-version``).

Ubuntu and Debian use NVIDIA's CUDA repository (the ``cuda-keyring`` package); RHEL and
its rebuilds NVIDIA's ``cuda-rhelN.repo`` and the driver's dnf module stream
(``nvidia-driver:<branch>-open`` or ``-dkms``). Where this host's sources do not name
NVIDIA's repository, the plan lists the commands that add it (apply does not fetch
keys from the network: run them, then apply). Components the lock knows without a
package (a ``.run`` install, a tarball) cannot be planned and are named in the notes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dolmen.errors import InputError
from dolmen.kb import KnowledgeBase
from dolmen.stack.model import Lock
from dolmen.stack.packages import PackageDb
from dolmen.stack.rules import Violation, check_lock

NVIDIA_REPO = "developer.download.nvidia.com/compute/cuda/repos"


class LockRefused(InputError):
    """The lock breaks a compatibility rule of the KB: no host can be brought to it."""

    def __init__(self, violations: Sequence[Violation], path: str) -> None:
        first = violations[0]
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        super().__init__(
            f"the lock is impossible: {first.line()}{more}",
            path=path,
            hint=f"fix the lock or lock a host that works (source: {first.source})",
        )
        self.violations = tuple(violations)


@dataclass(frozen=True)
class PackageStep:
    """One package of the lock and what the plan does with it."""

    name: str
    want: str
    current: str | None
    held: bool
    action: str  # ok | hold | install
    component: str

    def to_json(self) -> dict[str, Any]:
        """A plain dict for --json."""
        return {
            "name": self.name,
            "want": self.want,
            "current": self.current,
            "held": self.held,
            "action": self.action,
            "component": self.component,
        }


@dataclass(frozen=True)
class StackPlan:
    """What ``stack plan`` prints and ``stack apply`` runs."""

    lock_host: str
    host: str
    manager: str
    packages: tuple[PackageStep, ...]
    repository: tuple[tuple[str, ...], ...]  # commands adding NVIDIA's repository, if missing
    module_stream: str | None  # dnf: nvidia-driver:<branch>-open
    notes: tuple[str, ...]

    @property
    def wanted(self) -> dict[str, str]:
        """Every locked package at its version (what apply installs and holds)."""
        return {p.name: p.want for p in self.packages}

    @property
    def changes(self) -> tuple[PackageStep, ...]:
        """The packages that are not already as locked."""
        return tuple(p for p in self.packages if p.action != "ok")

    def to_json(self, commands: Sequence[Sequence[str]] = ()) -> dict[str, Any]:
        """The ``dolmen.stack.plan/1`` document (``commands`` as apply would run them)."""
        return {
            "schema": "dolmen.stack.plan/1",
            "lock_host": self.lock_host,
            "host": self.host,
            "manager": self.manager,
            "counts": {
                a: sum(1 for p in self.packages if p.action == a) for a in ("ok", "hold", "install")
            },
            "packages": [p.to_json() for p in self.packages],
            "repository": [list(c) for c in self.repository],
            "module_stream": self.module_stream,
            "commands": [list(c) for c in commands],
            "notes": list(self.notes),
        }


def build_plan(
    lock: Lock,
    here: Lock,
    db: PackageDb,
    sources: str | None,
    kb: KnowledgeBase,
    *,
    path: str = "<lock>",
) -> StackPlan:
    """The plan (module docstring); LockRefused or InputError when there can be none."""
    violations, notes = check_lock(lock, kb)
    if violations:
        raise LockRefused(violations, path)
    manager = here.package_manager
    if manager is None or db.manager is None:
        raise InputError(
            f"this host's package database cannot be read ({db.reason or 'no apt or dnf'})",
            hint="plan on the host itself, or on a snapshot that recorded var/lib/dpkg/status",
        )
    if lock.package_manager and lock.package_manager != manager:
        raise InputError(
            f"the lock was made on {lock.distribution} {lock.distribution_version} "
            f"({lock.package_manager}); this host uses {manager}: its package names differ",
            path=path,
            hint="lock a host of this distribution",
        )
    steps: list[PackageStep] = []
    for c in lock.components:
        if c.known and not c.packages and c.kind not in ("vbios", "nic-firmware", "module"):
            notes.append(
                f"{c.id} {c.version}: no package in the lock (a .run or tarball install?): "
                "not planned"
            )
        if c.kind in ("vbios", "nic-firmware") and c.known:
            now = here.by_id().get(c.id)
            if now is not None and now.version != c.version:
                notes.append(
                    f"{c.id}: {c.version} in the lock, {now.version} here: firmware is flashed "
                    "with the vendor's tool, not planned"
                )
        for p in c.packages:
            cur = db.installed.get(p.name)
            version, held = (cur.version, cur.held) if cur else (None, False)
            action = "install" if version != p.version else "ok" if held else "hold"
            steps.append(PackageStep(p.name, p.version, version, held, action, c.id))
    stream = None
    driver = lock.by_id().get("driver")
    if manager == "dnf" and driver is not None and driver.known and driver.packages:
        flavour = "open" if driver.details.get("flavour") == "open" else "dkms"
        stream = f"nvidia-driver:{driver.details.get('branch', '')}-{flavour}"
    repo: tuple[tuple[str, ...], ...] = ()
    if sources is None or NVIDIA_REPO not in sources:
        repo = repository_commands(here)
        notes.append(
            "NVIDIA's repository is not in this host's sources: add it first (repository commands)"
        )
    unique = {s.name: s for s in steps}
    return StackPlan(
        lock.host,
        here.host,
        manager,
        tuple(unique[n] for n in sorted(unique)),
        repo,
        stream,
        tuple(notes),
    )


def repository_commands(here: Lock) -> tuple[tuple[str, ...], ...]:
    """The commands that add NVIDIA's CUDA repository on this distribution."""
    arch = "sbsa" if here.architecture == "aarch64" else "x86_64"
    dist, ver = here.distribution or "", (here.distribution_version or "").split(".")
    base = f"https://{NVIDIA_REPO}"
    if here.package_manager == "apt":
        tag = f"{dist}{''.join(ver) if dist == 'ubuntu' else ver[0]}"
        deb = "/tmp/cuda-keyring_1.1-1_all.deb"
        return (
            ("wget", "-O", deb, f"{base}/{tag}/{arch}/cuda-keyring_1.1-1_all.deb"),
            ("dpkg", "-i", deb),
            ("apt-get", "update"),
        )
    major = ver[0] if ver and ver[0] else "9"
    return (
        ("dnf", "config-manager", "--add-repo", f"{base}/rhel{major}/{arch}/cuda-rhel{major}.repo"),
    )
