"""dolmen's users, groups and GPU quotas on Slurm accounting (``dolmen.slurm.accounting``).

dolmen's group is a Slurm account; a user belongs to the accounts it has an
association with. A quota is ``GrpTRES=gres/gpu=N`` on the account (a group's)
or on the user's associations (a user's: Slurm counts it per association, dolmen
checks the user's jobs across all of them, which is never looser). Slurm only
enforces these with ``AccountingStorageEnforce=limits`` and then queues an
over-quota job forever (reason AssocGrpGRES); ``check`` refuses it up front
instead, naming the limit and the current use (from squeue).
"""

from __future__ import annotations

from collections.abc import Sequence

from dolmen.errors import UsageError
from dolmen.jobs.quota import Kind, Quota, QuotaExceeded, QuotaStore, Subject, User
from dolmen.jobs.spec import JobSpec
from dolmen.slurm.accounting import Accounting, grp_gpus
from dolmen.slurm.client import SlurmClient


class SlurmQuotaStore(QuotaStore):
    """QuotaStore on Slurm accounting (needs slurmdbd; see module docstring)."""

    backend = "slurm"

    def __init__(self, client: SlurmClient) -> None:
        self.accounting = Accounting(client)

    def accounts(self) -> list[str]:
        """Every Slurm account, by name."""
        return self.accounting.accounts()

    def validate_user(self, name: str, groups: Sequence[str]) -> None:
        if not groups:
            raise UsageError(
                f"on Slurm a user needs at least one group (a Slurm account): {name}",
                hint="dolmen users add NAME --group ACCOUNT",
            )

    def validate_quota(self, subject: Subject) -> None:
        if subject.kind is Kind.USER and not self.accounting.has_user(subject.name):
            raise UsageError(
                f"unknown Slurm user {subject.name!r}",
                hint="dolmen users add NAME --group ACCOUNT first",
            )

    def add_user(self, name: str, groups: Sequence[str]) -> User:
        self.validate_user(name, groups)
        self.accounting.set_user_accounts(name, groups)
        return User(name, tuple(groups))

    def remove_user(self, name: str) -> bool:
        if not self.accounting.has_user(name):
            return False
        self.accounting.delete_user(name)
        return True

    def users(self) -> list[User]:
        groups: dict[str, list[str]] = {}
        for account, user, _ in self.accounting.assocs():
            if user:
                groups.setdefault(user, []).append(account)
        return [User(u, tuple(sorted(gs))) for u, gs in sorted(groups.items())]

    def set_quota(self, subject: Subject, gpus: int) -> None:
        self._set(subject, gpus)

    def remove_quota(self, subject: Subject) -> bool:
        if self.quota(subject) is None:
            return False
        self._set(subject, None)
        return True

    def _set(self, subject: Subject, gpus: int | None) -> None:
        if subject.kind is Kind.GROUP:
            self.accounting.set_account_gpus(subject.name, gpus)
            return
        if not self.accounting.has_user(subject.name):
            raise UsageError(
                f"unknown Slurm user {subject.name!r}",
                hint="dolmen users add NAME --group ACCOUNT first",
            )
        self.accounting.set_user_gpus(subject.name, gpus)

    def quotas(self) -> list[Quota]:
        users: dict[str, int] = {}
        groups: dict[str, int] = {}
        for account, user, tres in self.accounting.assocs():
            n = grp_gpus(tres)
            if n is None:
                continue
            if user:
                users[user] = min(n, users.get(user, n))
            else:
                groups[account] = n
        return [Quota(Subject(Kind.USER, u), n) for u, n in sorted(users.items())] + [
            Quota(Subject(Kind.GROUP, g), n) for g, n in sorted(groups.items())
        ]

    def check(self, spec: JobSpec, user: str) -> None:
        """Refuse ``spec`` (QuotaExceeded) over the limit of the user or of the one account the
        job charges (``--account``, else the user's default): Slurm charges one association,
        so the limits of the user's other accounts do not apply to this job."""
        wanted = spec.total_gpus
        if wanted == 0:
            return
        subjects = [Subject(Kind.USER, user)]
        account = spec.account or self.accounting.default_account(user)
        if account:
            subjects.append(Subject(Kind.GROUP, account))
        limits = {q.subject: q.gpus for q in self.quotas()}
        for subject in subjects:
            if subject not in limits:
                continue
            used = self.usage(subject)
            if used + wanted > limits[subject]:
                raise QuotaExceeded(
                    f"{subject}: {wanted} GPUs requested, {used} in use of a limit of "
                    f"{limits[subject]}",
                    hint="wait for running jobs to finish, ask for fewer GPUs, "
                    "or ask an administrator to raise the limit (dolmen quota set)",
                )

    def usage(self, subject: Subject) -> int:
        col = 0 if subject.kind is Kind.USER else 1
        return sum(row[2] for row in self.accounting.gpus_held() if row[col] == subject.name)
