"""``dolmen tune``: plan, apply, verify and roll back performance profiles (docs/tune.md).

    dolmen tune [plan] PROFILE      what would change (never writes); the default
    dolmen tune apply PROFILE       journal, apply, read back (asks on a terminal)
    dolmen tune verify [PROFILE]    compare the host with the active profile (exit 1: drift)
    dolmen tune rollback            restore every original (asks on a terminal)
    dolmen tune recover             finish or undo an apply that was interrupted
    dolmen tune reapply             what a reboot undid of the active profile (tune_reapply.py)
    dolmen tune status | profiles | show PROFILE | recommend

Every command takes ``--root DIR`` to work on a host tree exactly as on the live
host. Exit codes: 0 done/in sync, 1 drift, 2 bad input or usage (a damaged journal:
file and line), 3 the host refused (not root, a write refused: rolled back; an original
not back), 4 the audit log or the journal is unwritable (rolled back), 130 SIGINT or
SIGTERM (rolled back).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from dolmen.cli.common import confirm, recover_choice, recover_flag, recover_options
from dolmen.cli.main import exit_with
from dolmen.errors import AuditUnavailable, EnvironmentProblem, ExitCode, InputError, UsageError

if TYPE_CHECKING:
    from dolmen.host import Host
    from dolmen.tune.profile import Profile
    from dolmen.tune.results import ApplyResult, RollbackResult
    from dolmen.tune.verify import TuneStatus

F = TypeVar("F", bound=Callable[..., Any])


def _common(f: F) -> F:
    f = click.option("--json", "as_json", is_flag=True, help="Print JSON.")(f)
    f = click.option(
        "--config",
        "config_path",
        metavar="FILE",
        default=None,
        help="Site configuration ([tune] profile); default $DOLMEN_CONFIG_DIR/dolmen.toml.",
    )(f)
    return click.option(
        "--root",
        metavar="DIR",
        default=None,
        help="Work on the host tree under DIR (default: this host, /).",
    )(f)


class TuneGroup(click.Group):
    """A group where an unknown first word is a profile to plan: ``dolmen tune ai-training``."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            return "plan", self.commands["plan"], args
        return super().resolve_command(ctx, args)


@click.group(cls=TuneGroup, invoke_without_command=True)
@click.pass_context
def tune(ctx: click.Context) -> None:
    """Plan, apply, verify and roll back performance profiles.

    With no command, plans the configured ([tune] profile) or recommended profile.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(plan, profile=None, root=None, config_path=None, as_json=False)


# --- helpers ---------------------------------------------------------------------------
def _host(root: str | None, *, change: bool = False) -> Host:
    from dolmen.host import open_host

    host = open_host(root)
    # A snapshot archive is extracted to a temporary folder: remove it when the command ends.
    click.get_current_context().call_on_close(host.close)
    if change and host.kind not in ("live", "tree"):
        raise UsageError(f"a {host.kind} host cannot be changed; extract it to a folder first")
    return host


def _profile(name: str | None, config_path: str | None, host: Host | None = None) -> Profile:
    from dolmen.config import load_config
    from dolmen.tune.profile import load_profile

    if name is None:
        name = load_config(config_path).get("tune", "profile")
    if name is None and host is not None:
        from dolmen.tune.recommend import read_traits, recommend

        rec = recommend(read_traits(host))
        click.echo(f"no profile named: planning the recommended one, {rec.profile} ({rec.why})")
        name = rec.profile
    if name is None:
        raise UsageError("name a profile", hint="`dolmen tune profiles` lists them")
    return load_profile(str(name))


def _console() -> Any:
    import os

    from rich.console import Console

    # Piped output (logs, CI) gets wide tables rather than rich's 80-column default.
    wide = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    return Console(width=200 if wide else None)


def _emit(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")


def _apply_exit(res: ApplyResult) -> None:
    """130 when a signal stopped it, 4 when the state disk refused, 3 when the host did."""
    if res.interrupted:
        exit_with(130)
    if res.state_error:
        _state_refused(res.state_error, res.rollback is None or res.rollback.complete)
    if not res.ok:
        exit_with(int(ExitCode.ENVIRONMENT))


def _rollback_exit(res: RollbackResult) -> None:
    if res.journal_lost:
        _state_refused(res.journal_lost, res.complete)
    if not res.complete:
        exit_with(int(ExitCode.ENVIRONMENT))


def _state_refused(why: str, restored: bool) -> None:
    if restored:
        raise AuditUnavailable(
            f"{why}; every original was put back",
            hint="free space on the state disk or make it writable, then `dolmen tune status`",
        )
    raise AuditUnavailable(
        f"{why}; and not every original could be put back",
        hint="free space on the state disk, then `dolmen tune recover --rollback` retries",
    )


def _interrupted_line(st: TuneStatus) -> str:
    from dolmen.tune.journal_view import State

    assert st.journal is not None
    what = "an apply" if st.journal.state is State.APPLYING else "a rollback"
    return (
        f"{what} of {st.journal.profile} was interrupted ({st.journal.progress}; "
        f"journal {st.journal.path}): the host is partly tuned"
    )


def _warn_interrupted(st: TuneStatus) -> None:
    if st.interrupted:
        click.echo(f"dolmen: warning: {_interrupted_line(st)}", err=True)
        click.echo("hint: `dolmen tune recover` rolls it back or completes it", err=True)


def _recover(host: Host, st: TuneStatus, choice: str | None, yes: bool) -> None:
    """Roll back or complete an interrupted journal, as the user chooses."""
    from dolmen.tune.engine import complete, journal_plan, require_root, rollback
    from dolmen.tune.journal_view import State
    from dolmen.tune.render import render_apply, render_rollback

    assert st.journal is not None
    require_root(host, journal_plan(st.journal), doing="recovering")
    only_rollback = st.journal.state is State.ROLLING_BACK
    choice = recover_choice(
        _interrupted_line(st),
        choice,
        yes,
        only_rollback=only_rollback,
        hint="dolmen tune recover --rollback (restore the originals)",
    )
    if choice == "complete" and only_rollback:
        raise UsageError("a rollback was interrupted: it can only be finished (--rollback)")
    if choice == "complete":
        res = complete(host, st.journal, st.folder)
        render_apply(res, _console())
        _apply_exit(res)
        return
    rb = rollback(host, st.journal, st.folder, reason="interrupted journal rolled back")
    render_rollback(rb, _console())
    _rollback_exit(rb)


# --- commands ------------------------------------------------------------------------------
@tune.command()
@click.argument("profile", required=False)
@_common
def plan(profile: str | None, root: str | None, config_path: str | None, as_json: bool) -> None:
    """Show what PROFILE would change on this host. Never writes."""
    from dolmen.tune.planner import plan_profile
    from dolmen.tune.render import render_plan
    from dolmen.tune.verify import tune_status

    host = _host(root)
    prof = _profile(profile, config_path, host)
    try:
        st: TuneStatus | None = tune_status(host)
    except InputError as e:  # planning never writes: say it, and show the plan
        click.echo(f"dolmen: warning: {e.message}", err=True)
        st = None
    if st is not None:
        _warn_interrupted(st)
    active = st.active if st is not None else None
    result = plan_profile(host, prof)
    if as_json:
        _emit({**result.to_json(), "active": active, "read_only": prof.read_only})
        return
    header = []
    if prof.read_only:
        header.append(f"{prof.name} is a read-only reference: this shows how the host differs")
    if active and active != prof.name:
        header.append(f"active now: {active} (apply rolls it back first)")
    render_plan(result, _console(), header=header)


@tune.command()
@click.argument("profile", required=False)
@_common
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (scripts, CI).")
def apply(
    profile: str | None, root: str | None, config_path: str | None, as_json: bool, yes: bool
) -> None:
    """Apply PROFILE: journal each original, write, read back; roll back on a refusal."""
    from dolmen.tune.engine import apply_plan, require_root, rollback
    from dolmen.tune.planner import plan_profile
    from dolmen.tune.render import render_apply, render_plan, render_rollback
    from dolmen.tune.verify import tune_status

    host = _host(root, change=True)
    prof = _profile(profile, config_path)
    if prof.read_only:
        raise UsageError(
            f"{prof.name} is a read-only reference of stock values; it is never applied",
            hint="`dolmen tune rollback` restores the values the host had before dolmen",
        )
    st = tune_status(host)
    if st.interrupted:
        _recover(host, st, None, yes)
        st = tune_status(host)
    result = plan_profile(host, prof)
    switching = st.active is not None
    if not result.steps and st.active == prof.name:
        click.echo(f"{prof.name} is active and the host holds it: nothing to change")
        return
    require_root(host, result)
    if not as_json:
        head = (
            [f"switching from {st.active}: its changes are rolled back first"] if switching else []
        )
        render_plan(result, _console(), header=head)
    confirm(f"Apply {prof.name} to {host.hostname} ({len(result.steps)} changes)?", yes)
    if switching and st.journal is not None:
        rb = rollback(host, st.journal, st.folder, reason=f"switching to {prof.name}")
        if not as_json:
            render_rollback(rb, _console())
        _rollback_exit(rb)
        result = plan_profile(host, prof)
    res = apply_plan(host, result, st.folder, extra={"profile_path": prof.path})
    if as_json:
        _emit(res.to_json())
    else:
        render_apply(res, _console())
    _apply_exit(res)


@tune.command()
@_common
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (scripts, CI).")
def rollback(root: str | None, config_path: str | None, as_json: bool, yes: bool) -> None:
    """Restore every original the active (or an interrupted) apply changed."""
    from dolmen.tune.engine import journal_plan, require_root
    from dolmen.tune.engine import rollback as do_rollback
    from dolmen.tune.render import render_rollback
    from dolmen.tune.verify import tune_status

    host = _host(root, change=True)
    st = tune_status(host)
    if st.journal is None:
        click.echo("nothing to roll back: no profile is active on this host")
        return
    if st.busy:
        raise EnvironmentProblem("another dolmen tune is changing this host", hint="wait for it")
    require_root(host, journal_plan(st.journal), doing="rolling back")
    n = len(st.journal.saved)
    confirm(f"Roll back {st.journal.profile} on {host.hostname} ({n} originals)?", yes)
    reason = "interrupted journal rolled back" if st.interrupted else "requested"
    res = do_rollback(host, st.journal, st.folder, reason=reason)
    if as_json:
        _emit(res.to_json())
    else:
        render_rollback(res, _console())
    _rollback_exit(res)


@tune.command()
@_common
@recover_options("Restore the originals.")
def recover(
    root: str | None,
    config_path: str | None,
    as_json: bool,
    to_rollback: bool,
    to_complete: bool,
    yes: bool,
) -> None:
    """Roll back or complete an apply that was interrupted (killed, power lost)."""
    from dolmen.tune.verify import tune_status

    choice = recover_flag(to_rollback, to_complete)
    host = _host(root, change=True)
    st = tune_status(host)
    if not st.interrupted:
        click.echo("nothing to recover: no interrupted apply or rollback on this host")
        return
    _recover(host, st, choice, yes)


@tune.command()
@click.argument("profile", required=False)
@_common
def verify(profile: str | None, root: str | None, config_path: str | None, as_json: bool) -> None:
    """Compare the host with the active profile (or PROFILE). Exit 1 on drift."""
    from dolmen.tune.model import Action
    from dolmen.tune.planner import plan_profile
    from dolmen.tune.render import change_rows
    from dolmen.tune.verify import Verification, tune_status, verify_journal

    host = _host(root)
    st = tune_status(host)
    _warn_interrupted(st)
    if profile is not None:
        p = plan_profile(host, _profile(profile, config_path))
        v = Verification(p.profile, st.folder, tuple(p.changes))
    elif st.journal is not None and st.active is not None:
        v = verify_journal(host, st.journal)
    else:
        raise UsageError("no active profile to verify", hint="name one: dolmen tune verify PROFILE")
    if as_json:
        _emit(v.to_json())
    else:
        con = _console()
        con.print(change_rows(v.rows, verify=True))
        drift, pending = len(v.drift), v.count(Action.PENDING)
        state = f"{drift} drifted" if drift else "in sync"
        con.print(f"{v.profile}: {state}, {v.count(Action.OK)} in sync, {pending} pending")
    exit_with(int(ExitCode.UNHEALTHY) if v.drift else int(ExitCode.OK))


@tune.command()
@_common
def status(root: str | None, config_path: str | None, as_json: bool) -> None:
    """Which profile is active, whether it drifted, and anything interrupted."""
    from dolmen.tune.verify import status_doc, tune_status

    host = _host(root)
    st = tune_status(host)
    doc = status_doc(host, st)
    if as_json:
        _emit(doc)
        return
    if st.interrupted:
        click.echo(_interrupted_line(st))
        click.echo("run `dolmen tune recover` to roll it back or complete it")
    elif st.active is None:
        click.echo(f"no profile active on {host.hostname}")
    else:
        click.echo(f"{st.active} active on {host.hostname} since {doc['applied_at']}")
        click.echo(f"drift: {len(doc['drift'])} ({', '.join(doc['drift']) or 'none'})")
        click.echo(f"pending a reboot or restart: {', '.join(doc['pending']) or 'nothing'}")
        click.echo(f"journal: {doc['journal']}")


@tune.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def profiles(as_json: bool) -> None:
    """List the shipped and site profiles."""
    from dolmen.tune.profile import list_profiles

    rows = list_profiles()
    if as_json:
        _emit({"schema": "dolmen.tune.profiles/1", "profiles": rows})
        return
    for r in rows:
        tag = " (read only)" if r.get("read_only") else ""
        tag += " (shadowed by a site profile)" if r.get("shadowed") else ""
        text = r.get("description") or f"INVALID: {r.get('error')}"
        click.echo(f"{r['name']:<24} {r['kind']:<8} {text}{tag}")


@tune.command()
@click.argument("profile")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show(profile: str, as_json: bool) -> None:
    """Show PROFILE merged, with the file and line each value came from."""
    from dolmen.tune.profile import load_profile
    from dolmen.tune.render import render_profile

    p = load_profile(profile)
    if not as_json:
        render_profile(p, _console())
        return
    _emit(p.to_json())


@tune.command()
@click.option("--root", metavar="DIR", default=None, help="Look at the host tree under DIR.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def recommend(root: str | None, as_json: bool) -> None:
    """Say which profile suits this host, and why."""
    from dolmen.tune.recommend import read_traits
    from dolmen.tune.recommend import recommend as choose

    rec = choose(read_traits(_host(root)))
    if as_json:
        _emit(rec.to_json())
        return
    click.echo(f"{rec.profile}: {rec.why}")
    for note in rec.notes:
        click.echo(f"note: {note}")


from dolmen.cli.tune_reapply import reapply  # noqa: E402  (one module per command past 400 lines)

tune.add_command(reapply)
