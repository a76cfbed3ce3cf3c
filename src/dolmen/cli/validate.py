"""``dolmen validate``: is this host ready for AI work, what is wrong, how to fix it."""

from __future__ import annotations

import sys

import click

from dolmen.cli.common import config_option, from_option
from dolmen.cli.main import exit_with
from dolmen.errors import UsageError


@click.command()
@click.option(
    "--level",
    type=click.Choice(["quick", "standard", "full"], case_sensitive=False),
    default=None,
    help="quick: passive reads under a second (Slurm health checks); standard (default); "
    "full: adds active workloads.",
)
@from_option
@config_option
@click.option(
    "--baseline",
    "baseline_path",
    metavar="FILE",
    help="Report every deviation from a baseline made by `dolmen baseline capture`.",
)
@click.option("--only", multiple=True, metavar="ID", help="Run only these checks or categories.")
@click.option("--json", "as_json", is_flag=True, help="Print the dolmen.verdict/1 JSON document.")
@click.option("-v", "--verbose", is_flag=True, help="Show passing and skipped checks too.")
@click.option("--list", "list_checks", is_flag=True, help="List the checks and exit.")
def validate(
    level: str | None,
    source: str | None,
    config_path: str | None,
    baseline_path: str | None,
    only: tuple[str, ...],
    as_json: bool,
    verbose: bool,
    list_checks: bool,
) -> None:
    """Tell whether this host (or a host tree) is ready for AI work.

    Exit codes: 0 healthy (or degraded: warnings only), 1 unhealthy, 2 could not decide.
    """
    from dolmen.checks.model import Level
    from dolmen.config import load_config

    config = load_config(config_path)
    level_name = level or str(config.get("validate", "level", "standard"))
    try:
        lvl = Level.parse(level_name)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if list_checks:
        _list(lvl)
        return
    baseline = None
    if baseline_path:
        from dolmen.baseline import load_baseline

        baseline = load_baseline(baseline_path)
    from dolmen.checks.suite import validate as run
    from dolmen.host import open_host

    with open_host(source) as host:
        verdict = run(host, level=lvl, config=config, baseline=baseline, only=only)
    if as_json:
        from dolmen.report.json import render_json

        sys.stdout.write(render_json(verdict))
    else:
        from rich.console import Console

        from dolmen.report.terminal import render_terminal

        render_terminal(verdict, Console(), verbose=verbose)
    exit_with(int(verdict.health.exit_code))


def _list(level: object) -> None:
    from dolmen.checks import load_registry

    for spec in sorted(load_registry().values(), key=lambda s: s.id):
        limits = ", ".join(f"{k}={v}" for k, v in spec.limits.items())
        click.echo(
            f"{spec.id:<40} {spec.level.name.lower():<9} {spec.title}"
            + (f"  [{limits}]" if limits else "")
        )
