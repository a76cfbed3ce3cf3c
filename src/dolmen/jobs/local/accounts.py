"""Users, groups and GPU quotas of the local backend, in the job store's database.

Usage counts what a job holds: the GPUs it was given, or, while it waits for
them, the GPUs it asked for, so two submissions in a row cannot both slip under
a limit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from dolmen.jobs.local.store import ACTIVE, JobRow, JobStore
from dolmen.jobs.quota import Kind, Quota, QuotaStore, Subject, User, check_name


class LocalQuotaStore(QuotaStore):
    """The local backend's accounts (see module docstring)."""

    backend = "local"

    def __init__(self, store: JobStore) -> None:
        self.store = store

    def add_user(self, name: str, groups: Sequence[str]) -> User:
        check_name("user", name)
        for g in groups:
            check_name("group", g)
        uniq = tuple(dict.fromkeys(groups))
        with self.store.write() as db:
            db.execute(
                "INSERT INTO users (name, groups) VALUES (?, ?)"
                " ON CONFLICT(name) DO UPDATE SET groups = excluded.groups",
                (name, json.dumps(list(uniq))),
            )
        return User(name, uniq)

    def remove_user(self, name: str) -> bool:
        with self.store.write() as db:
            n = db.execute("DELETE FROM users WHERE name = ?", (name,)).rowcount
            db.execute("DELETE FROM quotas WHERE kind = 'user' AND name = ?", (name,))
        return n > 0

    def users(self) -> list[User]:
        rows = self.store.db.execute("SELECT name, groups FROM users ORDER BY name").fetchall()
        return [User(r[0], tuple(json.loads(r[1]))) for r in rows]

    def set_quota(self, subject: Subject, gpus: int) -> None:
        check_name(subject.kind.value, subject.name)
        with self.store.write() as db:
            db.execute(
                "INSERT INTO quotas (kind, name, gpus) VALUES (?, ?, ?)"
                " ON CONFLICT(kind, name) DO UPDATE SET gpus = excluded.gpus",
                (subject.kind.value, subject.name, gpus),
            )

    def remove_quota(self, subject: Subject) -> bool:
        with self.store.write() as db:
            n = db.execute(
                "DELETE FROM quotas WHERE kind = ? AND name = ?",
                (subject.kind.value, subject.name),
            ).rowcount
        return n > 0

    def quotas(self) -> list[Quota]:
        rows = self.store.db.execute(
            "SELECT kind, name, gpus FROM quotas ORDER BY kind DESC, name"
        ).fetchall()
        return [Quota(Subject(Kind(r[0]), r[1]), r[2]) for r in rows]

    def usage(self, subject: Subject) -> int:
        jobs = [j for j in self.store.jobs() if j.state in ACTIVE]
        if subject.kind is Kind.USER:
            return sum(_held(j) for j in jobs if j.user == subject.name)
        members = {u.name for u in self.users() if subject.name in u.groups}
        return sum(_held(j) for j in jobs if j.user in members or j.spec.account == subject.name)


def _held(job: JobRow) -> int:
    return len(job.gpus) or job.nodes * job.spec.gpus_per_node
