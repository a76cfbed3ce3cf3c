"""Options and helpers shared by the command modules."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from dolmen.host import Host

F = TypeVar("F", bound=Callable[..., Any])


def from_option(f: F) -> F:
    """``--from PATH``: read a host tree, a snapshot, a sosreport or one pasted file
    (docs/bundles.md) instead of the live host."""
    return click.option(
        "--from",
        "source",
        metavar="PATH",
        multiple=True,
        callback=_once,
        help=(
            "Read a host tree folder, a snapshot .tar.gz, a sosreport, an "
            "nvidia-bug-report.log(.gz) or one command's output (nvidia-smi -q -x, dmesg, "
            "ibstat...; see docs/bundles.md) instead of this host."
        ),
    )(f)


def _once(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> str | None:
    """The one value of an option given at most once: click keeps the last of two silently,
    so ``--from A --from B`` would read B and say nothing about A."""
    if len(value) > 1:
        name = param.opts[0] if param.opts else param.name
        raise click.UsageError(f"{name} given {len(value)} times; give it once", ctx)
    return value[0] if value else None


def config_option(f: F) -> F:
    """``--config FILE``: the site configuration (default /etc/dolmen/dolmen.toml)."""
    return click.option(
        "--config",
        "config_path",
        metavar="FILE",
        multiple=True,
        callback=_once,
        help="Site configuration file (default: $DOLMEN_CONFIG_DIR or /etc/dolmen/dolmen.toml).",
    )(f)


def confirm(question: str, yes: bool) -> None:
    """Ask before a change (``--yes`` skips it); without a terminal, refuse with the hint."""
    if yes:
        return
    import sys

    from dolmen.errors import UsageError

    if not sys.stdin.isatty():
        raise UsageError("not a terminal: nothing to confirm with", hint="pass --yes")
    if not click.confirm(question, default=False):
        raise click.Abort()


def finish_change(
    doc: dict[str, Any],
    as_json: bool,
    ok: bool,
    state: str | None,
    sig: str | None,
    *,
    again: str,
    values: bool = True,
) -> None:
    """Print the document of an apply or rollback through tune's engine (``stack apply``,
    ``nccl env --write``...), then leave with its exit code: 130 after a signal, 4 when
    the state disk refused the journal or the audit log (``again``: the command that
    completes it), 3 when the host refused a write. ``values``: print each step's value
    read back (False where it is a whole file)."""
    import json

    from dolmen.cli.main import exit_with
    from dolmen.errors import AuditUnavailable, ExitCode

    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        for step in doc.get("steps", []):
            after = f": {step.get('after')}" if values else ""
            click.echo(f"  {step['status']:<8} {step['target']}{after}")
        for r in doc.get("restored", doc.get("rollback", {}).get("restored", [])):
            state_word = "back" if r["exact"] else "not back"
            shown = f": {r['restored']}" if values else ""
            click.echo(f"  {state_word:<8} {r['target']}{shown} {r['error'] or ''}".rstrip())
        if doc.get("error"):
            click.echo(f"error: {doc['error']}" + (" (rolled back)" if doc.get("rollback") else ""))
        click.echo(f"journal: {doc.get('journal')}")
    if sig:
        exit_with(130)
    if state:
        raise AuditUnavailable(state, hint=f"free space on the state disk, then {again}")
    if not ok:
        exit_with(int(ExitCode.ENVIRONMENT))


def change_options(root_help: str) -> Callable[[F], F]:
    """``--root DIR`` (``root_help`` says what is changed there instead of this machine),
    ``--yes`` and ``--json`` of a change through tune's engine (``stack apply``, ``stack
    rollback``, ``nccl rollback``)."""

    def add(f: F) -> F:
        f = click.option("--json", "as_json", is_flag=True, help="Print JSON.")(f)
        f = click.option(
            "--yes", "-y", is_flag=True, help="Do not ask for confirmation (scripts, CI)."
        )(f)
        return click.option("--root", metavar="DIR", default=None, help=root_help)(f)

    return add


def change_host(root: str | None, what: str, *, tree: bool = False) -> Host:
    """The host a change writes: this machine, or the folder ``--root`` names (``what``:
    the kind of folder it must be); a ``--root`` that is not a folder is bad usage.

    ``tree``: the folder is a host tree, opened as ``tune --root`` opens it (links
    resolved inside the tree: an ``etc`` linked to /etc is the tree's own, so a hostile
    tree cannot point the write at this machine's files); else a private root that
    commands run in (stack's apt), this machine with another /."""
    from dolmen.errors import UsageError
    from dolmen.host.live import LiveHost
    from dolmen.host.tree import TreeHost

    if root is None:
        return LiveHost(Path("/"))
    if not Path(root).is_dir():
        raise UsageError(f"--root {root}: not a folder", hint=f"name the {what}'s folder")
    return TreeHost(Path(root)) if tree else LiveHost(Path(root))


def rollback_change(
    host: Host,
    folder: Path,
    *,
    what: str,
    doing: str,
    question: str,
    again: str,
    as_json: bool,
    yes: bool,
    kind: str = "tune",
    values: bool = True,
) -> None:
    """The ``rollback`` of a change through tune's engine (``stack``, ``nccl``): put back
    what the active journal in ``folder`` saved, once root and the user agree
    (``question``, with ``{profile}`` and ``{host}`` filled in), then ``finish_change``;
    "nothing to roll back" when no ``what`` is active on the host."""
    from dolmen.tune.engine import journal_plan, require_root, rollback
    from dolmen.tune.journal import open_journal

    view = open_journal(folder)
    if view is None:
        click.echo(f"nothing to roll back: no {what} is active on this host")
        return
    require_root(host, journal_plan(view), doing=doing)
    confirm(question.format(profile=view.profile, host=host.hostname), yes)
    res = rollback(host, view, folder, reason="requested", kind=kind)
    finish_change(
        res.to_json(), as_json, res.complete, res.journal_lost, None, again=again, values=values
    )


def recover_options(rollback_help: str) -> Callable[[F], F]:
    """``--rollback``, ``--complete`` and ``--yes`` of a recover command (``tune recover``,
    ``net recover``); ``rollback_help`` says what a rollback puts back."""

    def add(f: F) -> F:
        f = click.option(
            "--yes", "-y", is_flag=True, help="Do not ask (then --rollback or --complete)."
        )(f)
        f = click.option("--complete", "to_complete", is_flag=True, help="Finish the apply.")(f)
        return click.option("--rollback", "to_rollback", is_flag=True, help=rollback_help)(f)

    return add


def recover_flag(to_rollback: bool, to_complete: bool) -> str | None:
    """The choice the flags of a recover command make (None: neither); both is bad usage."""
    from dolmen.errors import UsageError

    if to_rollback and to_complete:
        raise UsageError(
            "--rollback and --complete contradict each other", hint="choose one of them"
        )
    return "rollback" if to_rollback else "complete" if to_complete else None


def recover_choice(
    line: str, choice: str | None, yes: bool, *, only_rollback: bool, hint: str
) -> str:
    """``choice`` when the flags made one; else asked on a terminal (``line`` says what was
    interrupted). Off a terminal, or with ``--yes``, an EnvironmentProblem whose hint names
    both choices: ``hint`` the rollback, then the completion unless ``only_rollback`` (an
    interrupted rollback can only be finished). A boot or a script never guesses."""
    if choice is not None:
        return choice
    import sys

    from dolmen.errors import EnvironmentProblem

    if yes or not sys.stdin.isatty():
        raise EnvironmentProblem(
            line, hint=hint + ("" if only_rollback else " or --complete (finish the apply)")
        )
    click.echo(line)
    choices = ["rollback"] if only_rollback else ["rollback", "complete"]
    choice = click.prompt("Roll it back or complete it?", type=click.Choice([*choices, "quit"]))
    if choice == "quit":
        raise click.Abort()
    return str(choice)
