"""Users, groups and GPU quotas in Slurm's accounting (slurmdbd), through sacctmgr.

dolmen's group is a Slurm account; a user belongs to the accounts it has an
association with. A quota is ``GrpTRES=gres/gpu=N`` on the account (a group's)
or on the user's associations (a user's: Slurm counts it per association, dolmen
checks the user's jobs across all of them, which is never looser). Slurm only
enforces these with ``AccountingStorageEnforce=limits`` and then queues an
over-quota job forever (reason AssocGrpGRES); ``dolmen.jobs.quota.check`` refuses
it up front instead, naming the limit and the current use (from squeue).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from dolmen.errors import UsageError
from dolmen.jobs.quota import Kind, Quota, QuotaExceeded, QuotaStore, Subject, User
from dolmen.jobs.slurm import parse
from dolmen.jobs.slurm.client import SlurmClient
from dolmen.jobs.spec import JobSpec

_GPU_TRES = re.compile(r"(?:^|,)gres/gpu=(\d+)(?:,|$)")
# squeue: user, account, GPUs per node ("gres:gpu:4", "N/A"), node count.
SQUEUE_USAGE = "%u|%a|%b|%D"


def grp_gpus(tres: str) -> int | None:
    """N from a GrpTRES string holding ``gres/gpu=N`` (``cpu=8,gres/gpu=4``); None without."""
    m = _GPU_TRES.search(tres.strip())
    return int(m.group(1)) if m else None


def assoc_rows(text: str) -> list[tuple[str, str, str]]:
    """(account, user, grptres) from ``sacctmgr -n -P show assoc format=account,user,grptres``."""
    rows = []
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) >= 3 and parts[0].strip():
            rows.append((parts[0].strip(), parts[1].strip(), parts[2].strip()))
    return rows


def usage_rows(text: str) -> list[tuple[str, str, int]]:
    """(user, account, GPUs held) per job from ``squeue -h -o SQUEUE_USAGE``."""
    rows = []
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) != 4 or not parts[3].strip().isdigit():
            continue
        per_node = parse.gres_gpus(parts[2].strip().removeprefix("gres:")) or 0
        rows.append((parts[0].strip(), parts[1].strip(), per_node * int(parts[3])))
    return rows


class SlurmQuotaStore(QuotaStore):
    """QuotaStore on Slurm accounting (needs slurmdbd; see module docstring)."""

    backend = "slurm"

    def __init__(self, client: SlurmClient) -> None:
        self.client = client

    def _sacctmgr(self, *args: str) -> str:
        return self.client.out(["sacctmgr", "-i", *args])

    def _assocs(self) -> list[tuple[str, str, str]]:
        out = self.client.out(
            ["sacctmgr", "-n", "-P", "show", "assoc", "format=account,user,grptres"]
        )
        return assoc_rows(out)

    def accounts(self) -> list[str]:
        """Every Slurm account, by name."""
        return sorted({a for a, _, _ in self._assocs()})

    def _ensure_account(self, name: str) -> None:
        if name not in self.accounts():
            self._sacctmgr("add", "account", name, f"Description={name}", "Organization=dolmen")

    def add_user(self, name: str, groups: Sequence[str]) -> User:
        if not groups:
            raise UsageError(
                f"on Slurm a user needs at least one group (a Slurm account): {name}",
                hint="dolmen users add NAME --group ACCOUNT",
            )
        for g in groups:
            self._ensure_account(g)
        have = {a for a, u, _ in self._assocs() if u == name}
        for g in groups:
            if g not in have:
                self._sacctmgr("add", "user", name, f"account={g}", f"DefaultAccount={groups[0]}")
        for g in sorted(have - set(groups)):
            self._sacctmgr("delete", "user", name, f"account={g}")
        return User(name, tuple(groups))

    def remove_user(self, name: str) -> bool:
        if all(u != name for _, u, _ in self._assocs()):
            return False
        self._sacctmgr("delete", "user", name)
        return True

    def users(self) -> list[User]:
        groups: dict[str, list[str]] = {}
        for account, user, _ in self._assocs():
            if user:
                groups.setdefault(user, []).append(account)
        return [User(u, tuple(sorted(gs))) for u, gs in sorted(groups.items())]

    def set_quota(self, subject: Subject, gpus: int) -> None:
        self._set(subject, f"GrpTRES=gres/gpu={gpus}")

    def remove_quota(self, subject: Subject) -> bool:
        if self.quota(subject) is None:
            return False
        self._set(subject, "GrpTRES=gres/gpu=-1")  # -1 clears a limit in sacctmgr
        return True

    def _set(self, subject: Subject, setting: str) -> None:
        if subject.kind is Kind.GROUP:
            self._ensure_account(subject.name)
            self._sacctmgr("modify", "account", "where", f"name={subject.name}", "set", setting)
        else:
            if all(u != subject.name for _, u, _ in self._assocs()):
                raise UsageError(
                    f"unknown Slurm user {subject.name!r}",
                    hint="dolmen users add NAME --group ACCOUNT first",
                )
            self._sacctmgr("modify", "user", "where", f"name={subject.name}", "set", setting)

    def quotas(self) -> list[Quota]:
        users: dict[str, int] = {}
        groups: dict[str, int] = {}
        for account, user, tres in self._assocs():
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

    def default_account(self, user: str) -> str | None:
        """The account a job of ``user`` charges when it names none."""
        out = self.client.out(
            ["sacctmgr", "-n", "-P", "show", "user", user, "format=defaultaccount"]
        )
        return next((line.strip() for line in out.splitlines() if line.strip()), None)

    def check(self, spec: JobSpec, user: str) -> None:
        """Refuse ``spec`` (QuotaExceeded) over the limit of the user or of the one account the
        job charges (``--account``, else the user's default): Slurm charges one association,
        so the limits of the user's other accounts do not apply to this job."""
        wanted = spec.total_gpus
        if wanted == 0:
            return
        subjects = [Subject(Kind.USER, user)]
        account = spec.account or self.default_account(user)
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
        out = self.client.out(["squeue", "-h", "-o", SQUEUE_USAGE])
        col = 0 if subject.kind is Kind.USER else 1
        return sum(row[2] for row in usage_rows(out) if row[col] == subject.name)
