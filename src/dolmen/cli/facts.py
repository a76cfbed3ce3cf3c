"""``dolmen facts``: what dolmen knows about a host, as a tree or JSON."""

from __future__ import annotations

import json
import sys

import click

from dolmen.cli.common import from_option
from dolmen.errors import UsageError


@click.command()
@from_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON (like Ansible's setup module).")
@click.option("--only", multiple=True, metavar="SUBSYSTEM", help="Only these subsystems.")
def facts(source: str | None, as_json: bool, only: tuple[str, ...]) -> None:
    """Print the facts of this host (or of a host tree or snapshot)."""
    from dolmen.facts import SUBSYSTEMS, FactStore, to_jsonable
    from dolmen.host import open_host

    bad = [o for o in only if o not in SUBSYSTEMS]
    if bad:
        raise UsageError(f"unknown subsystem {bad[0]!r}; valid subsystems: {', '.join(SUBSYSTEMS)}")
    with open_host(source) as host:
        collected = FactStore(host).collect(only or None)
        doc = {"host": host.describe(), **{k: to_jsonable(v) for k, v in collected.items()}}
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    from rich.console import Console
    from rich.pretty import Pretty

    console = Console()
    for name, value in doc.items():
        console.rule(name)
        console.print(Pretty(value, expand_all=False))
