"""Users, groups and GPU quotas, the same for every backend (``QuotaStore``).

A backend keeps its accounts where it enforces them: the local backend in its
SQLite store (``accounts.LocalQuotaStore``), Slurm in its accounting
(sacctmgr associations with GrpTRES=gres/gpu=N), Kubernetes as a ResourceQuota
per namespace. ``check`` refuses a job over any limit that applies to its user
(the user's own, and each of the user's groups), naming the limit and current use.
The module functions below make each change an audit event, whatever the store.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from dolmen.compat import StrEnum
from dolmen.errors import EnvironmentProblem, UsageError
from dolmen.jobs.audit import change
from dolmen.jobs.spec import JobSpec

# POSIX portable user names (and Slurm account names) fit this.
_NAME = re.compile(r"^[a-z_][a-z0-9_.-]{0,31}$")

# A quota above every GPU a site could own is a typo; SQLite's integers end at 2**63
# (``quota set --gpus 99999999999999999999`` crashed after "success" was audited).
MAX_QUOTA_GPUS = 1_000_000


def check_name(kind: str, name: str) -> str:
    """``name`` if it is a valid user or group name, else UsageError saying what is."""
    if not _NAME.match(name):
        raise UsageError(
            f"{kind} name {name!r} is not valid",
            hint="lowercase letters, digits, '_', '-' and '.', starting with a letter or '_'",
        )
    return name


def check_gpus(gpus: int) -> int:
    """``gpus`` if it is a quota dolmen can store, else UsageError naming the range."""
    if not 0 <= gpus <= MAX_QUOTA_GPUS:
        raise UsageError(
            f"--gpus must be between 0 and {MAX_QUOTA_GPUS}, not {gpus}",
            hint="give the number of GPUs the subject's jobs may hold at once",
        )
    return gpus


class Kind(StrEnum):
    """Who a quota applies to."""

    USER = "user"
    GROUP = "group"


@dataclass(frozen=True)
class Subject:
    """A user or a group."""

    kind: Kind
    name: str

    def __str__(self) -> str:
        return f"{self.kind.value} {self.name}"


@dataclass(frozen=True)
class Quota:
    """At most ``gpus`` GPUs held at once by the subject's running and pending jobs."""

    subject: Subject
    gpus: int


@dataclass(frozen=True)
class User:
    """A user the backend knows, with the groups (Slurm: accounts) it belongs to."""

    name: str
    groups: tuple[str, ...] = ()


class QuotaExceeded(EnvironmentProblem):
    """A job would take a user or group over its GPU limit; nothing was submitted (exit 3)."""


class QuotaStore(ABC):
    """Where a backend keeps users, groups and their GPU limits."""

    backend: str = "abstract"

    @abstractmethod
    def add_user(self, name: str, groups: Sequence[str]) -> User:
        """Create the user, or set its groups when it exists."""

    @abstractmethod
    def remove_user(self, name: str) -> bool:
        """Forget the user (and its own quota); False when it was not known."""

    @abstractmethod
    def users(self) -> list[User]:
        """Every known user, by name."""

    @abstractmethod
    def set_quota(self, subject: Subject, gpus: int) -> None:
        """Limit the subject to ``gpus`` GPUs at once."""

    @abstractmethod
    def remove_quota(self, subject: Subject) -> bool:
        """Lift the subject's limit; False when it had none."""

    @abstractmethod
    def quotas(self) -> list[Quota]:
        """Every limit, users then groups, by name."""

    @abstractmethod
    def usage(self, subject: Subject) -> int:
        """GPUs the subject's jobs hold now (running, pending or restarting)."""

    def validate_user(self, name: str, groups: Sequence[str]) -> None:
        """Refuse (UsageError) a user this store would refuse, before any event is
        recorded (default: the module's name checks are all there is)."""
        return

    def validate_quota(self, subject: Subject) -> None:
        """Refuse (UsageError) a subject this store cannot limit, before any event."""
        return

    def quota(self, subject: Subject) -> Quota | None:
        """The subject's limit, if it has one."""
        return next((q for q in self.quotas() if q.subject == subject), None)

    def groups_of(self, user: str) -> tuple[str, ...]:
        """The groups ``user`` belongs to (none for an unknown user)."""
        return next((u.groups for u in self.users() if u.name == user), ())


def current_user() -> str:
    """Who submits: the user behind sudo when there is one, else the login name."""
    import getpass
    import os

    return os.environ.get("SUDO_USER") or getpass.getuser()


def check(store: QuotaStore, spec: JobSpec, user: str) -> None:
    """Refuse ``spec`` (QuotaExceeded) when it would take ``user`` or one of its groups over
    a limit: "user alice: 6 GPUs requested, 4 in use of a limit of 8"."""
    wanted = spec.total_gpus
    if wanted == 0:
        return
    groups = list(store.groups_of(user))
    if spec.account and spec.account not in groups:
        groups.append(spec.account)
    subjects = [Subject(Kind.USER, user), *(Subject(Kind.GROUP, g) for g in groups)]
    for subject in subjects:
        limit = store.quota(subject)
        if limit is None:
            continue
        used = store.usage(subject)
        if used + wanted > limit.gpus:
            raise QuotaExceeded(
                f"{subject}: {wanted} GPUs requested, {used} in use of a limit of {limit.gpus}",
                hint="wait for running jobs to finish, ask for fewer GPUs, "
                "or ask an administrator to raise the limit (dolmen quota set)",
            )


def set_quota(store: QuotaStore, subject: Subject, gpus: int) -> None:
    """Set a limit (audited as quota.set: intent, then outcome; input checked first)."""
    check_name(subject.kind.value, subject.name)
    check_gpus(gpus)
    store.validate_quota(subject)
    old = store.quota(subject)
    details = {"backend": store.backend, "gpus": gpus, "was": old.gpus if old else None}
    with change("quota.set", str(subject), details):
        store.set_quota(subject, gpus)


def remove_quota(store: QuotaStore, subject: Subject) -> bool:
    """Lift a limit (audited as quota.remove); False when there was none (no event)."""
    if store.quota(subject) is None:
        return False
    with change("quota.remove", str(subject), {"backend": store.backend}):
        return store.remove_quota(subject)


def add_user(store: QuotaStore, name: str, groups: Sequence[str]) -> User:
    """Add a user or set its groups (audited as users.add; names checked first)."""
    check_name("user", name)
    for g in groups:
        check_name("group", g)
    store.validate_user(name, groups)
    details = {"backend": store.backend, "groups": list(groups)}
    with change("users.add", f"user {name}", details):
        return store.add_user(name, groups)


def remove_user(store: QuotaStore, name: str) -> bool:
    """Remove a user (audited as users.remove); False when it was unknown (no event)."""
    if all(u.name != name for u in store.users()):
        return False
    with change("users.remove", f"user {name}", {"backend": store.backend}):
        return store.remove_user(name)
