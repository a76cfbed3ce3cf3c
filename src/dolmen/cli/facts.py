"""``dolmen facts``: what dolmen knows about a host, as an inventory, a tree or JSON.

``--json`` prints the ``dolmen.facts/1`` document (``dolmen schema facts``: its JSON
Schema); ``--summary`` the inventory a person reads first (GPUs, CPUs, memory, NICs and
InfiniBand ports, mounts, stack versions: ``cli/facts_summary.py``), naming what was not
read rather than leaving it out.
"""

from __future__ import annotations

import json
import sys

import click

from dolmen.cli.common import from_option
from dolmen.errors import UsageError

SCHEMA = "dolmen.facts/1"


@click.command()
@from_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON (like Ansible's setup module).")
@click.option(
    "--summary", is_flag=True, help="Print an inventory table (GPUs, CPUs, NICs, mounts, stack)."
)
@click.option("--only", multiple=True, metavar="SUBSYSTEM", help="Only these subsystems.")
def facts(source: str | None, as_json: bool, summary: bool, only: tuple[str, ...]) -> None:
    """Print the facts of this host (or of a host tree or snapshot)."""
    from dolmen.facts import SUBSYSTEMS, FactStore, to_jsonable
    from dolmen.host import open_host

    if as_json and summary:
        raise UsageError("--json and --summary are two outputs; choose one")
    bad = [o for o in only if o not in SUBSYSTEMS]
    if bad:
        raise UsageError(f"unknown subsystem {bad[0]!r}; valid subsystems: {', '.join(SUBSYSTEMS)}")
    names: tuple[str, ...] | None = only or None
    if summary:
        if only:
            raise UsageError("--summary shows the whole inventory; --only is for the full facts")
        from dolmen.cli.facts_summary import NEEDS

        names = NEEDS  # only what the table shows: no kernel log, no security reads
    with open_host(source) as host:
        collected = FactStore(host).collect(names)
        doc = {
            "schema": SCHEMA,
            "host": host.describe(),
            **{k: to_jsonable(v) for k, v in collected.items()},
        }
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    if summary:
        from dolmen.cli.facts_summary import render_summary

        sys.stdout.write(render_summary(doc))
        return
    from rich.console import Console
    from rich.pretty import Pretty

    console = Console()
    for name, value in doc.items():
        if name == "schema":
            continue
        console.rule(name)
        console.print(Pretty(value, expand_all=False))
