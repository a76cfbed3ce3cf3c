"""Slurm's accounting (slurmdbd) in Slurm's own terms: accounts, users' associations,
``GrpTRES=gres/gpu=N`` limits (sacctmgr) and the GPUs jobs hold now (squeue).

``dolmen.jobs.slurm.quota`` maps dolmen's users, groups and quotas onto these.
The parsers are pure; ``Accounting`` runs the commands through a ``SlurmClient``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from dolmen.slurm import parse
from dolmen.slurm.client import SlurmClient

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


class Accounting:
    """sacctmgr and squeue for accounts, associations and GPU limits (needs slurmdbd)."""

    def __init__(self, client: SlurmClient) -> None:
        self.client = client

    def _sacctmgr(self, *args: str) -> str:
        return self.client.out(["sacctmgr", "-i", *args])

    def assocs(self) -> list[tuple[str, str, str]]:
        """(account, user, grptres) of every association (user "" for the account's own)."""
        out = self.client.out(
            ["sacctmgr", "-n", "-P", "show", "assoc", "format=account,user,grptres"]
        )
        return assoc_rows(out)

    def accounts(self) -> list[str]:
        """Every Slurm account, by name."""
        return sorted({a for a, _, _ in self.assocs()})

    def ensure_account(self, name: str) -> None:
        """Create the account when it does not exist."""
        if name not in self.accounts():
            self._sacctmgr("add", "account", name, f"Description={name}", "Organization=dolmen")

    def set_user_accounts(self, name: str, accounts: Sequence[str]) -> None:
        """Give ``name`` an association with each of ``accounts`` (the first its default)
        and none with any other."""
        for g in accounts:
            self.ensure_account(g)
        have = {a for a, u, _ in self.assocs() if u == name}
        for g in accounts:
            if g not in have:
                self._sacctmgr("add", "user", name, f"account={g}", f"DefaultAccount={accounts[0]}")
        for g in sorted(have - set(accounts)):
            self._sacctmgr("delete", "user", name, f"account={g}")

    def has_user(self, name: str) -> bool:
        """The user has at least one association."""
        return any(u == name for _, u, _ in self.assocs())

    def delete_user(self, name: str) -> None:
        """Remove every association of ``name``."""
        self._sacctmgr("delete", "user", name)

    def set_account_gpus(self, name: str, gpus: int | None) -> None:
        """GrpTRES=gres/gpu=N on the account (None lifts it: -1 clears a limit)."""
        self.ensure_account(name)
        self._sacctmgr("modify", "account", "where", f"name={name}", "set", _tres(gpus))

    def set_user_gpus(self, name: str, gpus: int | None) -> None:
        """GrpTRES=gres/gpu=N on every association of the user (None lifts it)."""
        self._sacctmgr("modify", "user", "where", f"name={name}", "set", _tres(gpus))

    def default_account(self, user: str) -> str | None:
        """The account a job of ``user`` charges when it names none."""
        out = self.client.out(
            ["sacctmgr", "-n", "-P", "show", "user", user, "format=defaultaccount"]
        )
        return next((line.strip() for line in out.splitlines() if line.strip()), None)

    def gpus_held(self) -> list[tuple[str, str, int]]:
        """(user, account, GPUs) of every pending and running job."""
        return usage_rows(self.client.out(["squeue", "-h", "-o", SQUEUE_USAGE]))


def _tres(gpus: int | None) -> str:
    return f"GrpTRES=gres/gpu={-1 if gpus is None else gpus}"
