"""``dolmen stack``: lock, compare and restore the exact software stack (docs/stack.md).

    dolmen stack lock -o stack.toml [--from TREE]   the stack of this host, as a lock
    dolmen stack diff stack.toml [--from TREE]      every drift (exit 1: drift)
    dolmen stack plan stack.toml [--from TREE]      the apt/dnf commands, after the KB rules
    dolmen stack apply stack.toml [--dry-run]       run them through the change engine
    dolmen stack rollback                           reinstall the versions apply replaced

Exit codes: 0 done / no drift; 1 drift (diff); 2 bad input, an impossible lock (the
rule it breaks), or a diff that could not decide (components unknown here); 3 the host
refused (not root, a package not offered, apt failed: rolled back); 4 the audit log or
the journal unwritable (rolled back); 130 interrupted (rolled back).
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dolmen.cli.common import (
    change_host,
    change_options,
    confirm,
    finish_change,
    from_option,
    rollback_change,
)
from dolmen.cli.main import exit_with
from dolmen.errors import EnvironmentProblem

if TYPE_CHECKING:
    from dolmen.host import Host
    from dolmen.stack.model import Lock
    from dolmen.stack.plan import StackPlan

_AGAIN = "dolmen stack rollback"
_ROOT_HELP = (
    "Change the packages of a private root DIR (apt through DIR/etc/apt/apt.conf, dpkg "
    "--admindir, rpm --root) instead of this machine's."
)


def _emit(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")


def _read_host(source: str | None) -> Host:
    from dolmen.host import open_host

    host = open_host(source)
    click.get_current_context().call_on_close(host.close)
    return host


@click.group()
def stack() -> None:
    """Lock, compare and restore the exact software stack of a host."""


@stack.command()
@click.option("-o", "--output", metavar="FILE", default=None, help="Write the lock (TOML) here.")
@click.option("--json", "as_json", is_flag=True, help="Print the lock as JSON.")
@from_option
def lock(output: str | None, as_json: bool, source: str | None) -> None:
    """Write the exact stack of this host (or of --from TREE) as a lock."""
    from dolmen.fsutil import write_output
    from dolmen.stack.lockfile import dumps
    from dolmen.stack.observe import observe

    result = observe(_read_host(source))
    text = dumps(result)
    if output is not None:
        write_output(Path(output), text.encode(), what="stack lock")
    if as_json:
        _emit(result.to_json())
    elif output is None:
        sys.stdout.write(text)
    else:
        known = sum(1 for c in result.components if c.known)
        click.echo(f"wrote {output}: {known} of {len(result.components)} components known")
        for note in result.notes:
            click.echo(f"note: {note}")


@stack.command()
@click.argument("lockfile", metavar="LOCK")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@from_option
def diff(lockfile: str, as_json: bool, source: str | None) -> None:
    """Every drift of this host (or --from TREE) from LOCK. Exit 1: drift."""
    from dolmen.stack.diff import diff as do_diff
    from dolmen.stack.lockfile import load
    from dolmen.stack.observe import observe

    locked = load(Path(lockfile))
    result = do_diff(locked, observe(_read_host(source)))
    if as_json:
        _emit(result.to_json())
    else:
        for e in result.drifted:
            what = "; ".join(e.differences) or e.reason or ""
            click.echo(f"{e.status:<13} {e.id:<32} {e.locked or '-'} -> {e.here or '-'}  {what}")
        for note in result.notes:
            click.echo(f"note: {note}")
        n = len(result.drifted)
        click.echo(
            f"{result.count('same')} same, {n} drifted ({result.lock_host} -> {result.host})"
        )
    exit_with(result.exit_code)


def _plan(lockfile: str, host: Host) -> tuple[Lock, StackPlan]:
    from dolmen.kb import load_kb
    from dolmen.stack.lockfile import load
    from dolmen.stack.observe import observe
    from dolmen.stack.packages import read_packages, read_sources
    from dolmen.stack.plan import build_plan

    locked = load(Path(lockfile))
    here = observe(host)
    db = read_packages(host)
    return locked, build_plan(locked, here, db, read_sources(host), load_kb(), path=lockfile)


def _commands(host: Host, plan: StackPlan) -> list[list[str]]:
    from dolmen.stack.packages import manager_argv
    from dolmen.tune.settings.packages import commands

    if not plan.changes:
        return []
    argvs = commands(plan.manager, plan.wanted, module=plan.module_stream)
    try:
        return [manager_argv(host, a) for a in argvs]
    except ValueError as e:
        raise EnvironmentProblem(str(e), hint="write that apt.conf (docs/stack.md)") from None


def _show(plan: StackPlan, cmds: list[list[str]]) -> None:
    click.echo(f"stack plan: {plan.lock_host} -> {plan.host} ({plan.manager})")
    for p in plan.packages:
        cur = (p.current or "(not installed)") + (" held" if p.held else "")
        click.echo(f"  {p.action:<8} {p.name:<36} {cur} -> {p.want}")
    if plan.repository:
        click.echo("repository (NVIDIA's is not in this host's sources):")
        for repo_argv in plan.repository:
            click.echo("  " + shlex.join(repo_argv))
    click.echo("commands:" if cmds else "commands: none, the packages are as locked")
    for argv in cmds:
        click.echo("  " + shlex.join(argv))
    for note in plan.notes:
        click.echo(f"note: {note}")


@stack.command()
@click.argument("lockfile", metavar="LOCK")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@from_option
def plan(lockfile: str, as_json: bool, source: str | None) -> None:
    """The commands that bring this host (or --from TREE) to LOCK. Never changes anything."""
    host = _read_host(source)
    _, result = _plan(lockfile, host)
    cmds = _commands(host, result)
    if as_json:
        _emit(result.to_json(cmds))
    else:
        _show(result, cmds)


def _folder(host: Host) -> Path:
    from dolmen.tune.settings.packages import stack_dir

    return stack_dir(host)


@stack.command()
@click.argument("lockfile", metavar="LOCK")
@click.option("--dry-run", is_flag=True, help="Print the plan and the commands; change nothing.")
@change_options(_ROOT_HELP)
def apply(lockfile: str, dry_run: bool, root: str | None, yes: bool, as_json: bool) -> None:
    """Bring this host to LOCK: journal the previous versions, install, hold, read back."""
    from dolmen.fsutil import read_regular
    from dolmen.stack.packages import not_offered
    from dolmen.tune.engine import apply_plan, require_root
    from dolmen.tune.journal import open_journal
    from dolmen.tune.settings.packages import transaction_plan

    host = change_host(root, "private root")
    _, result = _plan(lockfile, host)
    cmds = _commands(host, result)
    profile = f"stack:{Path(lockfile).name}"
    tplan = transaction_plan(
        host, result.manager, result.wanted, profile=profile, module=result.module_stream
    )
    if dry_run or not tplan.steps:
        if as_json:
            _emit({**result.to_json(cmds), "dry_run": dry_run})
        else:
            _show(result, cmds)
        if not dry_run:
            click.echo("the host holds the lock: nothing to change")
        return
    folder = _folder(host)
    if open_journal(folder) is not None:
        raise EnvironmentProblem(
            "an earlier stack apply is active or was interrupted on this host",
            hint="dolmen stack rollback restores what it replaced; then apply again",
        )
    missing = not_offered(host, result.manager, {p.name: p.want for p in result.changes})
    if isinstance(missing, list) and missing:
        raise EnvironmentProblem(
            f"this host's repositories do not offer {', '.join(missing)}",
            hint="add NVIDIA's repository (dolmen stack plan lists the commands), apt-get update",
        )
    require_root(host, tplan, doing="applying the stack lock")
    if not as_json:
        _show(result, cmds)
    confirm(f"Install {len(result.changes)} packages on {host.hostname}?", yes)
    import hashlib

    digest = hashlib.sha256(read_regular(Path(lockfile), 4 << 20)).hexdigest()
    extra = {
        "kind": "stack",
        "lock": str(Path(lockfile).resolve()),
        "lock_sha256": digest,
        "previous": {p.name: p.current for p in result.changes},  # also journaled, exactly
    }
    res = apply_plan(host, tplan, folder, extra=extra)
    finish_change(res.to_json(), as_json, res.ok, res.state_error, res.interrupted, again=_AGAIN)


@stack.command()
@change_options(_ROOT_HELP)
def rollback(root: str | None, yes: bool, as_json: bool) -> None:
    """Reinstall the package versions (and holds) the last stack apply replaced."""
    host = change_host(root, "private root")
    rollback_change(
        host,
        _folder(host),
        what="stack apply",
        doing="rolling back the stack",
        question="Reinstall the previous packages of {profile} on {host}?",
        again=_AGAIN,
        as_json=as_json,
        yes=yes,
    )
