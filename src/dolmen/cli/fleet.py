"""``dolmen fleet``: gather many nodes' verdicts, report on them, validate through Slurm.

Exit codes: ``collect`` 0 when every source was stored, 2 when some were not (each said
why in one line; the others were stored); ``report`` 0, or 1 when a node is unhealthy,
2 when one is undecided; ``validate`` 0 all healthy, 1 a node unhealthy, 2 a node
without a verdict or undecided; 3 Slurm not reachable (docs/fleet.md).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

import click

from dolmen.compat import UTC
from dolmen.errors import ExitCode, UsageError


def _fleet_dir(value: str | None) -> Path:
    from dolmen.paths import state_dir

    return Path(value) if value else state_dir() / "fleet"


@click.group()
def fleet() -> None:
    """The fleet view: many nodes' verdicts side by side (docs/fleet.md)."""


@fleet.command()
@click.argument("sources", nargs=-1, required=True)
@click.option("-o", "--output", "fleet_dir", metavar="FLEETDIR", help="The fleet store.")
def collect(sources: tuple[str, ...], fleet_dir: str | None) -> int:
    """Gather verdicts (`dolmen validate --json`) from files, folders and agent URLs.

    A URL `http://host:9405` reads the agent's GET /v1/verdict/latest (`dolmen serve`).
    FLEETDIR defaults to $DOLMEN_STATE_DIR/fleet.
    """
    from dolmen.fleet.collect import collect as run
    from dolmen.fleet.store import FleetStore
    from dolmen.values.text import printable

    store = FleetStore(_fleet_dir(fleet_dir))
    got = run(sources, store)
    for item in got.items:
        click.echo(printable(item.line()), err=bool(item.error))
    for note in got.notes:
        click.echo(printable(note), err=True)
    click.echo(
        f"collection {got.id}: {len(got.stored)} verdict(s) stored in {store.root}, "
        f"{len(got.failed)} source(s) failed"
    )
    return int(ExitCode.UNDECIDED if got.failed else ExitCode.OK)


@fleet.command()
@click.argument("fleet_dir", required=False, metavar="[FLEETDIR]")
@click.option("--json", "as_json", is_flag=True, help="Print dolmen.fleet.report/1.")
def report(fleet_dir: str | None, as_json: bool) -> int:
    """Nodes x failing checks, outliers against the fleet, what changed since last time."""
    from dolmen.fleet import report as rep
    from dolmen.fleet.render import render
    from dolmen.fleet.store import FleetStore

    store = FleetStore(_fleet_dir(fleet_dir))
    if not store.root.is_dir():
        raise UsageError(
            f"{store.root}: no fleet store there", hint="dolmen fleet collect SOURCES... -o DIR"
        )
    latest, problems = store.latest()
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    doc = rep.build(
        latest,
        store.last_report(),
        store_problems=problems,
        generated=now,
        fleet_dir=str(store.root),
    )
    store.write_last_report(rep.state(doc))
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        for line in render(doc):
            click.echo(line)
    s = doc["summary"]
    if s["unhealthy"]:
        return int(ExitCode.UNHEALTHY)
    return int(ExitCode.UNDECIDED if s["undecided"] else ExitCode.OK)


@fleet.command()
@click.option("--slurm", is_flag=True, required=True, help="Run through Slurm (srun).")
@click.option("--partition", metavar="P", help="The partition (default: the default one).")
@click.option("--nodelist", metavar="N1,N2", help="Only these nodes of the partition.")
@click.option("--level", type=click.Choice(["quick", "standard", "full"]), default="quick")
@click.option("--drain", is_flag=True, help="Apply the drain contract (default: dry run).")
@click.option("-o", "--output", "fleet_dir", metavar="FLEETDIR", help="The fleet store.")
@click.option(
    "--from",
    "source",
    metavar="PATTERN",
    help="Validate a host tree per node instead of the live node: {node} is its name.",
)
@click.option(
    "--dolmen",
    "dolmen_cmd",
    metavar="CMD",
    help="How a node runs dolmen (default: this Python: `python -m dolmen.cli.main`).",
)
@click.option("--gpus-per-node", type=click.IntRange(1), help="GPUs to ask Slurm for.")
@click.option(
    "--wait",
    "wait_s",
    type=click.IntRange(1),
    default=30,
    show_default=True,
    help="Seconds srun may wait for the nodes (--immediate).",
)
@click.option(
    "--prefix",
    "prefix",
    multiple=True,
    metavar="ARG",
    help="Argv prefix to reach Slurm's commands (repeat per argument).",
)
def validate(
    slurm: bool,
    partition: str | None,
    nodelist: str | None,
    level: str,
    drain: bool,
    fleet_dir: str | None,
    source: str | None,
    dolmen_cmd: str | None,
    gpus_per_node: int | None,
    wait_s: int,
    prefix: tuple[str, ...],
) -> int:
    """Run the checks on every node through Slurm, store the verdicts, drain what fails."""
    import shlex

    from dolmen.fleet.store import FleetStore
    from dolmen.fleet.validate import run
    from dolmen.host import open_host
    from dolmen.slurm.client import SlurmClient
    from dolmen.values.text import printable

    store = FleetStore(_fleet_dir(fleet_dir))
    client = SlurmClient(open_host(None), prefix=prefix)
    client.ping()
    out = run(
        client,
        store,
        partition=partition,
        only=tuple(n for n in (nodelist or "").split(",") if n),
        apply=drain,
        say=lambda line: click.echo(printable(line)),
        level=level,
        source=source,
        dolmen=shlex.split(dolmen_cmd) if dolmen_cmd else None,
        gpus_per_node=gpus_per_node,
        wait_s=wait_s,
    )
    mode = "applied" if drain else "dry run: --drain applies it"
    click.echo(f"collection {out.collection.id} in {store.root} ({mode})")
    return int(out.exit_code)


def _add_collective() -> None:
    """``fleet collective`` lives in its own module (cli/fleet_collective.py)."""
    from dolmen.cli.fleet_collective import collective

    fleet.add_command(collective)


_add_collective()
