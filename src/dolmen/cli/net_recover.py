"""``dolmen net recover``: an apply the journal says was interrupted, rolled back or
completed with tune's engine (docs/net.md "Change flow"), as ``dolmen tune recover``.

``--rollback`` puts the journaled table back (what ``dolmen net rollback`` does to an
interrupted journal); ``--complete`` finishes the apply: the batch it had not run (or
had run without recording it), read back, commit, ``net.recover`` audit events. An
interrupted rollback can only be finished (``--rollback``). Without either, a terminal
asks; a script gets exit 3 with both choices named.

Exit codes: 0 recovered, or nothing to recover; 2 both flags, or --complete of a
rollback; 3 nothing chosen off a terminal, another dolmen net runs, or nft refused
(a failed completion is rolled back); 4 the audit log or the journal is unwritable.
"""

from __future__ import annotations

import click

from dolmen.cli.common import recover_choice, recover_flag, recover_options
from dolmen.cli.main import exit_with
from dolmen.cli.net_nft import _common, _emit, _host
from dolmen.errors import AuditUnavailable, ExitCode, UsageError


@click.command()
@_common
@recover_options("Put the journaled table back.")
def recover(
    netns: str | None, as_json: bool, to_rollback: bool, to_complete: bool, yes: bool
) -> None:
    """Roll back or complete a network policy apply that was interrupted."""
    from dolmen.net.nft_change import complete_policy, pending, rollback_policy
    from dolmen.tune.journal_view import State

    choice = recover_flag(to_rollback, to_complete)
    host = _host(netns)
    view = pending(host)
    if view is None or view.state is State.ACTIVE:
        click.echo("nothing to recover: no interrupted apply or rollback of a network policy")
        return
    what = "an apply" if view.state is State.APPLYING else "a rollback"
    line = f"{what} of {view.profile} was interrupted (journal {view.path})"
    choice = recover_choice(
        line,
        choice,
        yes,
        only_rollback=view.state is not State.APPLYING,
        hint="dolmen net recover --rollback (the journaled table back)",
    )
    if choice == "complete" and view.state is not State.APPLYING:
        raise UsageError(f"{line}: a rollback can only be finished", hint="use --rollback")
    if choice == "complete":
        res = complete_policy(host)
        assert res is not None
        ok, error, lost = res.ok, res.error, res.state_error
    else:
        rb = rollback_policy(host)
        assert rb is not None
        ok = rb.complete
        error = "; ".join(r.error for r in rb.not_back) or rb.journal_lost or None
        lost = rb.journal_lost
    doc = {
        "schema": "dolmen.net.recover/1",
        "policy": view.profile,
        "journal": str(view.path),
        "choice": choice,
        "ok": ok,
        "error": error,
    }
    if as_json:
        _emit(doc)
    elif ok:
        done = "completed, its table in force" if choice == "complete" else "rolled back"
        click.echo(f"{line}: {done}")
    else:
        click.echo(f"recovery of {view.profile} failed: {error}", err=True)
    if lost:
        raise AuditUnavailable(lost, hint="free space on the state disk, then retry")
    if not ok:
        exit_with(int(ExitCode.ENVIRONMENT))
