"""``dolmen net gc``: empty the job slots of jobs the scheduler no longer knows (docs/net-prove.md).

A slot whose job the scheduler (slurmctld through ``squeue``, or the local job store)
no longer knows belonged to a job whose end never ran: a node that rebooted, a
supervisor killed with -9. The prolog and the supervisor collect such slots before each
start; this command does it on demand. A dry run (what would be emptied) unless
``--yes``; with it, every stale slot is emptied in ONE atomic nft batch, each job with
its ``net.job_gc`` intent and outcome events. Only the schedulers whose slots are there
are asked; one that cannot say which jobs it knows keeps its slots (an unreachable
slurmctld is not evidence that no job runs).

Exit codes: 0 nothing stale, or all of it emptied; 1 (dry run) stale slots to empty;
2 a bad policy; 3 a scheduler could not say (its slots are kept), no nft, or nft refused
the batch (nothing changed); 4 the audit log is unwritable (nothing changed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from dolmen.cli.main import exit_with
from dolmen.cli.net_nft import _common, _emit, _host, _load, _policy_option
from dolmen.errors import ExitCode

if TYPE_CHECKING:
    from dolmen.host import Host

SCHEDULERS = ("slurm", "local")


def _known(host: Host, scheduler: str) -> tuple[set[str] | None, str]:
    """The job keys ``scheduler`` knows now, or None and why it cannot say."""
    if scheduler == "slurm":
        from dolmen.slurm.isolation import known_jobs

        return known_jobs(host)
    from dolmen.errors import DolmenError
    from dolmen.jobs.local.isolation import known_jobs as local_known
    from dolmen.jobs.local.store import JobStore

    try:
        return local_known(JobStore()), ""
    except DolmenError as e:
        return None, f"the local job store could not say which jobs run: {e.message}"


@click.command()
@_policy_option
@_common
@click.option(
    "--scheduler",
    type=click.Choice(SCHEDULERS),
    multiple=True,
    help="Only this scheduler's slots (repeatable; default every scheduler with slots).",
)
@click.option("--yes", "-y", is_flag=True, help="Empty them (without it: a dry run).")
def gc(
    policy_path: str,
    netns: str | None,
    as_json: bool,
    scheduler: tuple[str, ...],
    yes: bool,
) -> None:
    """Empty the job slots of jobs the scheduler no longer knows (a dry run unless --yes)."""
    from dolmen.net import jobs
    from dolmen.net.nft_jobs import slots_in_use

    host = _host(netns)
    policy = _load(policy_path)
    slots = slots_in_use(host)
    wanted = scheduler or SCHEDULERS
    present = [s for s in wanted if any(j.startswith(f"{s}-") for j in slots.values())]
    stale: dict[int, str] = {}
    undecided: dict[str, str] = {}
    known: dict[str, set[str]] = {}
    for s in present:
        keys, why = _known(host, s)
        if keys is None:
            undecided[s] = why
            continue
        known[s] = keys
        stale |= jobs.stale_jobs(slots, policy, s, keys)
    collected: list[str] = []
    if yes and stale:
        collected = jobs.collect_garbage(host, policy, known, actor="dolmen net gc", strict=True)
    doc: dict[str, Any] = {
        "schema": "dolmen.net.gc/1",
        "dry_run": not yes,
        "slots": len(slots),
        "stale": [{"job": j, "slot": k} for k, j in sorted(stale.items())],
        "collected": sorted(collected),
        "undecided": undecided,
    }
    if as_json:
        _emit(doc)
    else:
        _show(host.hostname, slots, stale, collected, undecided, yes)
    if undecided:
        exit_with(int(ExitCode.ENVIRONMENT))
    if stale and not yes:
        exit_with(int(ExitCode.UNHEALTHY))


def _show(
    hostname: str,
    slots: dict[int, str],
    stale: dict[int, str],
    collected: list[str],
    undecided: dict[str, str],
    yes: bool,
) -> None:
    for k, job in sorted(stale.items()):
        click.echo(f"  slot {k}: {job} (its scheduler no longer knows it)")
    for s, why in undecided.items():
        click.echo(f"  {s} slots kept: {why}", err=True)
    if not stale:
        click.echo(f"no stale job slot on {hostname} ({len(slots)} in use)")
    elif yes:
        click.echo(f"emptied {len(collected)} stale job slots in one batch: {', '.join(collected)}")
    else:
        click.echo(f"{len(stale)} stale job slots: `dolmen net gc --yes` empties them in one batch")
