"""The policy through tune's change engine: plan, apply, verify, rollback (docs/net.md).

The plan has one row: the ``[nftables]`` setting with key ``inet dolmen`` and the
compiled table as its value. ``apply`` is tune's ``apply_plan``: audit intent, the live
table journaled (fsync'd) before the one nft batch that replaces it, read back, commit,
audit result; a crash anywhere is recovered from the journal: ``rollback`` puts the
journaled table back, ``complete`` finishes the apply (``dolmen net recover``), both
tune's engine. Journals live in ``<state>/net`` (a namespace or a host tree gets its own
folder), apart from tune's, so a tuning profile and a network policy are active side by
side.

Applying a policy while another is active closes the older journal as ``superseded``
(no gap without isolation between the two) and journals the table it left: a rollback
undoes the last apply.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dolmen.errors import EnvironmentProblem
from dolmen.host import Host
from dolmen.net.model import Policy
from dolmen.net.nft import FAMILY, TABLE, Role, Table, active_jobs, compile_table, list_table
from dolmen.paths import state_dir
from dolmen.tune.engine import apply_plan, complete, rollback
from dolmen.tune.journal import Journal, change_dir, is_locked, locked, open_journal
from dolmen.tune.journal_view import JournalView, State
from dolmen.tune.model import Plan, Target
from dolmen.tune.results import ApplyResult, RollbackResult
from dolmen.tune.settings import SETTINGS
from dolmen.tune.settings.nft_io import Json, canonical, counters

KEY = f"{FAMILY} {TABLE}"


def net_folder(host: Host) -> Path:
    """dolmen net's journals for ``host``: ``<state>/net``, or a folder per namespace or
    host tree below it."""
    ns = getattr(host, "netns", None)
    if isinstance(ns, str):
        return state_dir() / "net" / "netns" / ns
    return change_dir(host, "net")


@dataclass(frozen=True)
class Diff:
    """The live table against the compiled one: objects to add and to remove, one line
    each (runtime job-slot elements aside)."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    reordered: bool = False

    @property
    def empty(self) -> bool:
        """Whether the live table is the policy's."""
        return not (self.added or self.removed or self.reordered)

    def to_json(self) -> dict[str, Any]:
        """For --json."""
        return {
            "added": list(self.added),
            "removed": list(self.removed),
            "reordered": self.reordered,
        }


@dataclass(frozen=True)
class NetPlan:
    """What ``net plan`` shows and ``net apply`` runs."""

    policy: Policy
    table: Table
    plan: Plan
    diff: Diff
    live: bool  # a table exists on the host now

    def to_json(self) -> dict[str, Any]:
        """The ``dolmen.net.plan/1`` document."""
        return {
            "schema": "dolmen.net.plan/1",
            "policy": self.policy.name,
            "origin": self.policy.origin,
            "table": KEY,
            "exists": self.live,
            "in_sync": self.diff.empty,
            "diff": self.diff.to_json(),
            "slots": self.table.slots,
            "batch_objects": len(self.table.objects),
        }


@dataclass
class NetVerify:
    """What ``net verify`` found: the diff, each rule's counters, the running jobs."""

    policy: str
    diff: Diff
    counters: list[tuple[str, str, int, int]] = field(default_factory=list)
    jobs: dict[str, int] = field(default_factory=dict)
    journal: str = ""

    def to_json(self) -> dict[str, Any]:
        """The ``dolmen.net.verify/1`` document."""
        return {
            "schema": "dolmen.net.verify/1",
            "policy": self.policy,
            "table": KEY,
            "in_sync": self.diff.empty,
            "diff": self.diff.to_json(),
            "journal": self.journal,
            "counters": [
                {"chain": c, "rule": r, "packets": p, "bytes": b} for c, r, p, b in self.counters
            ],
            "jobs": [{"job": j, "slot": k} for j, k in sorted(self.jobs.items())],
        }


def plan_policy(host: Host, policy: Policy, role: Role) -> NetPlan:
    """The plan (pure apart from reading the live table); NftMissing without nft."""
    table = compile_table(policy, role)
    live = list_table(host)
    setting = SETTINGS["nftables"]
    desired = json.dumps(table.to_json(), sort_keys=True)
    target = Target("nftables", KEY, f"nftables table {KEY}", desired, origin=policy.origin)
    change = setting.plan(target, setting.read(host, target))
    plan = Plan(policy.name, host.hostname, (change,))
    return NetPlan(policy, table, plan, diff(live, table), live is not None)


def apply_policy(host: Host, planned: NetPlan) -> ApplyResult:
    """Apply a plan through tune's engine (module docstring)."""
    folder = net_folder(host)
    view = open_journal(folder)
    if view is not None and view.state is not State.ACTIVE:
        raise EnvironmentProblem(
            f"an apply or rollback of {view.profile} was interrupted (journal {view.path})",
            hint="`dolmen net recover --rollback` puts the table it journaled back, "
            "`--complete` finishes the apply",
        )
    if view is not None:
        _supersede(folder, view, planned.policy.name)
    return apply_plan(
        host, planned.plan, folder, kind="net", extra={"policy_file": planned.policy.origin}
    )


def pending(host: Host) -> JournalView | None:
    """The journal a rollback would use: the active apply, or an interrupted one."""
    return open_journal(net_folder(host))


def rollback_policy(host: Host) -> RollbackResult | None:
    """Put back the table the last apply journaled (None: nothing to roll back)."""
    folder = net_folder(host)
    view = open_journal(folder)
    if view is None:
        return None
    if is_locked(folder):
        raise EnvironmentProblem("another dolmen net is changing this host", hint="wait for it")
    reason = "requested" if view.state is State.ACTIVE else "interrupted journal rolled back"
    return rollback(host, view, folder, reason=reason, kind="net")


def complete_policy(host: Host) -> ApplyResult | None:
    """Finish an interrupted apply with tune's engine (``complete``: the step it had not
    done, then commit); None when no apply was interrupted. EnvironmentProblem when a
    rollback was interrupted (it can only be finished) or another dolmen net runs."""
    folder = net_folder(host)
    view = open_journal(folder)
    if view is None or view.state is State.ACTIVE:
        return None
    if view.state is not State.APPLYING:
        raise EnvironmentProblem(
            f"a rollback of {view.profile} was interrupted (journal {view.path}): it can "
            "only be finished",
            hint="dolmen net recover --rollback",
        )
    if is_locked(folder):
        raise EnvironmentProblem("another dolmen net is changing this host", hint="wait for it")
    return complete(host, view, folder, kind="net")


def verify_policy(host: Host, policy: Policy, role: Role) -> NetVerify:
    """The live table against the policy, with counters and running jobs."""
    table = compile_table(policy, role)
    live = list_table(host)
    view = open_journal(net_folder(host))
    return NetVerify(
        policy.name,
        diff(live, table),
        counters(live or []),
        active_jobs(host) if live is not None else {},
        str(view.path) if view is not None else "",
    )


def diff(live: list[Json] | None, table: Table) -> Diff:
    """Objects the apply adds and removes (see ``Diff``)."""
    want = [_key(o) for o in canonical(table.objects, table.runtime_sets)]
    have = [_key(o) for o in canonical(live or [], table.runtime_sets)]
    add = Counter(want) - Counter(have)
    rem = Counter(have) - Counter(want)
    reordered = not add and not rem and want != have
    return Diff(
        tuple(_line(k) for k in add.elements()), tuple(_line(k) for k in rem.elements()), reordered
    )


def _supersede(folder: Path, view: JournalView, by: str) -> None:
    with locked(folder):
        j = Journal(view.path)
        j.append({"type": "rollback", "reason": f"superseded by an apply of {by}"})
        j.append({"type": "end", "state": "superseded"})


def _key(obj: Json) -> str:
    return json.dumps(obj, sort_keys=True)


def _line(key: str) -> str:
    """One object as a person reads it: ``rule input "management ip tcp"``."""
    ((kind, body),) = json.loads(key).items()
    if kind == "rule":
        return f"rule {body.get('chain')} {json.dumps(body.get('comment', ''))}"
    if kind == "set":
        elems = body.get("elem", [])
        shown = ", ".join(_elem(e) for e in elems[:6]) + (" ..." if len(elems) > 6 else "")
        return f"set {body.get('name')} ({body.get('type')}){': ' + shown if elems else ''}"
    if kind == "chain":
        hook = f" (hook {body['hook']}, policy {body.get('policy')})" if "hook" in body else ""
        return f"chain {body.get('name')}{hook}"
    return f"{kind} {body.get('family', '')} {body.get('name', '')}".strip()


def _elem(e: Any) -> str:
    if isinstance(e, dict) and "prefix" in e:
        return f"{e['prefix'].get('addr')}/{e['prefix'].get('len')}"
    if isinstance(e, dict) and "range" in e:
        return "-".join(str(x) for x in e["range"])
    return str(e)
