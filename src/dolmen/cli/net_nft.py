"""``dolmen net plan|apply|verify|rollback``: the nftables target (docs/net.md).

Exit codes: 0 done / in sync, 1 verify found drift, 2 a bad policy (file:line) or
usage, 3 the host refused (no nft, not root, nft refused the batch: nothing changed; a
failed apply is rolled back), 4 the audit log or the journal is unwritable (rolled back),
130 SIGINT or SIGTERM during an apply (rolled back).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from dolmen.cli.common import confirm
from dolmen.cli.main import exit_with
from dolmen.errors import AuditUnavailable, ExitCode

if TYPE_CHECKING:
    from dolmen.host import Host
    from dolmen.net.model import Policy
    from dolmen.net.nft_change import Diff

F = TypeVar("F", bound=Callable[..., Any])


def _common(f: F) -> F:
    f = click.option("--json", "as_json", is_flag=True, help="Print JSON.")(f)
    return click.option(
        "--netns",
        metavar="NAME",
        default=None,
        help="Work inside network namespace NAME (ip netns) instead of this host's.",
    )(f)


def _policy_option(f: F) -> F:
    return click.option(
        "--policy", "policy_path", metavar="FILE", required=True, help="The policy (TOML)."
    )(f)


def _host(netns: str | None) -> Host:
    if netns is None:
        from dolmen.host.live import LiveHost

        return LiveHost()
    from dolmen.errors import UsageError
    from dolmen.host.netns import NetnsHost

    try:
        return NetnsHost(netns)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _load(path: str) -> Policy:
    from dolmen.net.model import load_policy

    return load_policy(path)


def _emit(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")


# Job slots' sets and rules are alike: one line says how many (the pair sets, and the
# member and port sets of tables written before them).
_SLOT = re.compile(r'^(set j\d+_(v4|v6)(_tcp|_udp)? |set p\d+_(tcp|udp) |rule jobs "slot \d+ )')


def _show_diff(diff: Diff) -> None:
    for sign, lines in (("-", diff.removed), ("+", diff.added)):
        slots = [ln for ln in lines if _SLOT.match(ln)]
        for line in lines:
            if not _SLOT.match(line):
                click.echo(f"  {sign} {line}")
        if slots:
            click.echo(f"  {sign} {len(slots)} sets and rules of job slots")
    if diff.reordered:
        click.echo("  ~ the same rules in another order")


@click.command()
@_policy_option
@_common
def plan(policy_path: str, netns: str | None, as_json: bool) -> None:
    """Show what applying the policy changes in the live ruleset (never writes)."""
    from dolmen.net.nft_change import plan_policy
    from dolmen.net.role import host_role

    host = _host(netns)
    policy = _load(policy_path)
    planned = plan_policy(host, policy, host_role(host))
    if as_json:
        _emit(planned.to_json())
        return
    where = "replaces the live table" if planned.live else "creates it (there is none)"
    click.echo(f"policy {policy.name} ({policy.origin}) -> table inet dolmen on {host.hostname}")
    if planned.diff.empty:
        click.echo("the live table is the policy's: nothing to change")
        return
    _show_diff(planned.diff)
    n_add, n_rem = len(planned.diff.added), len(planned.diff.removed)
    click.echo(f"{n_add} to add, {n_rem} to remove; apply {where} in one nft batch")


@click.command()
@_policy_option
@_common
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (scripts, CI).")
def apply(policy_path: str, netns: str | None, as_json: bool, yes: bool) -> None:
    """Journal the live ruleset, then replace the table in one atomic batch."""
    from dolmen.net.nft_change import apply_policy, pending, plan_policy
    from dolmen.net.role import host_role

    host = _host(netns)
    policy = _load(policy_path)
    planned = plan_policy(host, policy, host_role(host))
    from dolmen.tune.journal_view import State

    view = pending(host)
    active = view is not None and view.state is State.ACTIVE and view.profile == policy.name
    if planned.diff.empty and active and not as_json:
        click.echo(f"{policy.name} is applied and the live table is its: nothing to change")
        return
    if not as_json:
        _show_diff(planned.diff)
    confirm(f"Apply network policy {policy.name} to {host.hostname}?", yes)
    res = apply_policy(host, planned)
    doc = {
        "schema": "dolmen.net.apply/1",
        "policy": policy.name,
        "journal": str(res.journal),
        "ok": res.ok,
        "error": res.error,
        "rolled_back": res.rollback is not None,
        "diff": planned.diff.to_json(),
    }
    if as_json:
        _emit(doc)
    elif res.ok:
        click.echo(f"applied {policy.name}: table inet dolmen in force (journal {res.journal})")
    else:
        click.echo(f"apply failed, nothing left changed: {res.error}", err=True)
    if res.interrupted:
        exit_with(130)
    if res.state_error:
        raise AuditUnavailable(res.state_error, hint="free space on the state disk, then retry")
    if not res.ok:
        exit_with(int(ExitCode.ENVIRONMENT))


@click.command()
@_policy_option
@_common
def verify(policy_path: str, netns: str | None, as_json: bool) -> None:
    """Compare the live ruleset with the policy (exit 1: drift); counters and jobs shown."""
    from dolmen.net.nft_change import verify_policy
    from dolmen.net.role import host_role

    host = _host(netns)
    policy = _load(policy_path)
    v = verify_policy(host, policy, host_role(host))
    if as_json:
        _emit(v.to_json())
    else:
        state = "in sync with" if v.diff.empty else "DIFFERS from"
        click.echo(f"table inet dolmen on {host.hostname} {state} policy {policy.name}")
        _show_diff(v.diff)
        for chain, rule, packets, size in v.counters:
            if packets or chain == "input":
                click.echo(f"  {chain:6} {rule:28} {packets:>10} packets {size:>12} bytes")
        for job, slot in sorted(v.jobs.items()):
            click.echo(f"  job {job} in slot {slot}")
    if not v.diff.empty:
        exit_with(int(ExitCode.UNHEALTHY))


@click.command()
@_common
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (scripts, CI).")
def rollback(netns: str | None, as_json: bool, yes: bool) -> None:
    """Put back the ruleset the last apply journaled (or finish an interrupted one)."""
    from dolmen.net.nft_change import pending, rollback_policy

    host = _host(netns)
    view = pending(host)
    if view is None:
        click.echo("nothing to roll back: no network policy applied by dolmen here")
        return
    confirm(f"Roll back network policy {view.profile} on {host.hostname}?", yes)
    res = rollback_policy(host)
    assert res is not None
    error = "; ".join(r.error for r in res.not_back) or res.journal_lost
    doc = {
        "schema": "dolmen.net.rollback/1",
        "policy": res.profile,
        "journal": str(res.journal),
        "complete": res.complete,
        "error": error or None,
    }
    if as_json:
        _emit(doc)
    elif res.complete:
        click.echo(f"rolled back {res.profile}: the journaled ruleset is back")
    else:
        click.echo(f"rollback incomplete: {error}; rerun `dolmen net rollback`", err=True)
    if res.journal_lost:
        raise AuditUnavailable(res.journal_lost, hint="free space on the state disk, then retry")
    if not res.complete:
        exit_with(int(ExitCode.ENVIRONMENT))
