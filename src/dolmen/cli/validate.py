"""``dolmen validate``: is this host ready for AI work, what is wrong, how to fix it."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from dolmen.cli.common import config_option, from_option
from dolmen.cli.main import exit_with
from dolmen.errors import UsageError

if TYPE_CHECKING:
    from dolmen.checks.verdict import Verdict
    from dolmen.host import Host


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
@click.option("--junit", "junit_path", metavar="FILE", help="Also write JUnit XML to FILE.")
@click.option(
    "--prometheus",
    "prom_path",
    metavar="FILE",
    help="Also write metrics for node_exporter's textfile collector to FILE (atomically).",
)
@click.option(
    "--npd",
    is_flag=True,
    help="node-problem-detector custom plugin mode: one line on stdout, exit 0 ok, 1 problem, "
    "2 unknown.",
)
@click.option(
    "--slurm",
    is_flag=True,
    help="Slurm HealthCheckProgram mode: drain this node with a reason naming the failed "
    "checks (never touches a node someone else drained).",
)
@click.option("-v", "--verbose", is_flag=True, help="Show passing and skipped checks too.")
@click.option("--list", "list_checks", is_flag=True, help="List the checks and exit.")
def validate(
    level: str | None,
    source: str | None,
    config_path: str | None,
    baseline_path: str | None,
    only: tuple[str, ...],
    as_json: bool,
    junit_path: str | None,
    prom_path: str | None,
    npd: bool,
    slurm: bool,
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

    if as_json and npd:
        raise UsageError("--json and --npd both write to stdout; choose one")
    with open_host(source) as host:
        verdict = run(host, level=lvl, config=config, baseline=baseline, only=only)
        slurm_action = _slurm(host, verdict) if slurm else None
    _write_side_outputs(verdict, junit_path, prom_path)
    if npd:
        from dolmen.report.reason import one_line_reason

        click.echo(one_line_reason(verdict, 80))
    elif as_json:
        from dolmen.report.json import render_json

        sys.stdout.write(render_json(verdict))
    else:
        from rich.console import Console

        from dolmen.report.terminal import render_terminal

        render_terminal(verdict, Console(), verbose=verbose)
    if slurm_action:
        click.echo(slurm_action, err=True)
    exit_with(int(verdict.health.exit_code))


def _write_side_outputs(verdict: Verdict, junit_path: str | None, prom_path: str | None) -> None:
    from pathlib import Path

    from dolmen.fsutil import atomic_write

    if junit_path:
        from dolmen.report.junit import render_junit

        atomic_write(Path(junit_path), render_junit(verdict).encode())
    if prom_path:
        from dolmen.report.prometheus import render_prometheus

        # node_exporter reads *.prom files; an atomic rename means it never sees half a file.
        atomic_write(Path(prom_path), render_prometheus(verdict).encode())


def _slurm(host: Host, verdict: Verdict) -> str:
    from dolmen.slurm.drain import drain_if_unhealthy

    return drain_if_unhealthy(host, verdict)


def _list(level: object) -> None:
    from dolmen.checks import load_registry

    for spec in sorted(load_registry().values(), key=lambda s: s.id):
        limits = ", ".join(f"{k}={v}" for k, v in spec.limits.items())
        click.echo(
            f"{spec.id:<40} {spec.level.name.lower():<9} {spec.title}"
            + (f"  [{limits}]" if limits else "")
        )
