"""``dolmen tune reapply``: rewrite what a reboot undid of the active profile (the rows
whose setting kind does not persist: IRQ affinity, /proc/sys and /sys values, the CPU
governor, GPU persistence mode), from the journal, never the whole profile
(tune/reapply.py). Run by packaging/systemd/dolmen-tune-boot.service at boot.

    dolmen tune reapply --dry-run     the rows and what would be written; never writes
    dolmen tune reapply [--yes]       write the drifted ones (asks on a terminal)

Exit: 0 nothing active, nothing drifted, or every row written held; 3 a row the host
refused or kept, a target that moved (``dolmen tune apply PROFILE`` re-plans it), an
interrupted apply (``dolmen tune recover``), not root; 2 a damaged journal; 4 the audit
log or the journal is unwritable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from dolmen.cli.common import confirm
from dolmen.cli.main import exit_with
from dolmen.errors import EnvironmentProblem, ExitCode

if TYPE_CHECKING:
    from dolmen.tune.reapply import Reapply


@click.command()
@click.option("--root", metavar="DIR", default=None, help="Work on the host tree under DIR.")
@click.option(
    "--dry-run", "dry_run", is_flag=True, help="Show what would be written; write nothing."
)
@click.option("--json", "as_json", is_flag=True, help="Print the dolmen.tune.reapply/1 document.")
@click.option(
    "--yes", "-y", is_flag=True, help="Do not ask for confirmation (boot units, scripts)."
)
def reapply(root: str | None, dry_run: bool, as_json: bool, yes: bool) -> None:
    """Re-apply the active profile's settings that do not survive a reboot."""
    from dolmen.cli.tune import _console, _emit, _host, _interrupted_line
    from dolmen.tune.engine import require_root
    from dolmen.tune.model import Plan
    from dolmen.tune.reapply import apply_reapply, plan_reapply
    from dolmen.tune.render import render_plan
    from dolmen.tune.verify import tune_status

    host = _host(root, change=not dry_run)
    st = tune_status(host)
    if st.interrupted:
        raise EnvironmentProblem(
            _interrupted_line(st), hint="dolmen tune recover --rollback (or --complete) first"
        )
    if st.busy:
        raise EnvironmentProblem("another dolmen tune is changing this host", hint="wait for it")
    if st.active is None or st.journal is None:
        if as_json:
            _emit({"schema": "dolmen.tune.reapply/1", "profile": None})
        else:
            click.echo(f"no tune profile is active on {host.hostname}: nothing to re-apply")
        return
    got = plan_reapply(host, st.journal)
    plan = Plan(got.profile, host.hostname, tuple(r.change for r in got.rows))
    if not as_json:
        head = [
            f"{got.profile}: {len(got.rows)} settings that a reboot resets (journal {got.journal})"
        ]
        render_plan(plan, _console(), header=head)
    if got.writes and not dry_run:
        require_root(host, plan, doing="re-applying")
        confirm(f"Re-apply {len(got.writes)} settings of {got.profile} on {host.hostname}?", yes)
        got = apply_reapply(host, got, st.folder)
    if as_json:
        _emit(got.to_json())
    else:
        _say(got, dry_run)
    if not got.complete:
        exit_with(int(ExitCode.ENVIRONMENT))


def _say(got: Reapply, dry_run: bool) -> None:
    for r in got.moved:
        click.echo(
            f"{r.change.target.name}: {r.moved}: `dolmen tune apply {got.profile}` re-plans it",
            err=True,
        )
    if not got.writes:
        click.echo(f"{got.profile} holds: nothing to re-apply")
    elif dry_run:
        click.echo(f"dry run: {len(got.writes)} settings would be re-applied (without --dry-run)")
    else:
        for r in got.writes:
            o = got.outcomes[r.index]
            click.echo(f"{r.change.target.name}: {o.status}{f' ({o.note})' if o.note else ''}")
        held = sum(1 for o in got.outcomes.values() if o.status == "done" and o.held)
        click.echo(f"re-applied {held} of {len(got.writes)} settings of {got.profile}")
