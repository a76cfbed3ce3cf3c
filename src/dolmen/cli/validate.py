"""``dolmen validate``: is this host ready for AI work, what is wrong, how to fix it.

The options live here; the body is ``cli/validate_run.py``, which the lean entry
(``cli/lean.py``) also runs without importing click. The command hands click's values on as
they come, typed as ``ValidateArgs`` (cli/lean.py), which mypy holds to ``run_validate``'s
parameters: the parameter list is not written a third time here."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from dolmen.cli.common import config_option, from_option
from dolmen.cli.main import exit_with

if TYPE_CHECKING:
    from dolmen.cli.lean import ValidateArgs
    from dolmen.compat import Unpack


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
@click.option(
    "--only",
    multiple=True,
    metavar="ID",
    help="Run only these checks or categories (repeat it, or a comma-separated list).",
)
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
@click.option(
    "--timeout",
    metavar="DURATION",
    help="Bound the whole run (NHC's -t): 30s, 2m, or a number of seconds. What has not "
    "answered by then is named, and the verdict is undecided (exit 2).",
)
@click.option(
    "--device",
    type=click.Choice(["cuda", "cpu"], case_sensitive=False),
    default=None,
    help="Level full: run the workloads on the GPUs (cuda, the default where a GPU is seen) "
    "or on CPU torch (cpu: measured, no GPU threshold; the verdict stays undecided).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Level full: run the workloads even on a GPU another process is using.",
)
@click.option("-v", "--verbose", is_flag=True, help="Show passing and skipped checks too.")
@click.option("--matrix", is_flag=True, help="Show the per-GPU findings as a check x GPU table.")
@click.option(
    "--status",
    "statuses",
    metavar="LIST",
    help="List only findings of these statuses: fail,warn,unknown,error,pass,skip.",
)
@click.option("--gpu", metavar="N", help="List only the findings of GPU N (index or bus id).")
@click.option("--list", "list_checks", is_flag=True, help="List the checks and exit.")
def validate(**args: Unpack[ValidateArgs]) -> None:
    """Tell whether this host (or a host tree) is ready for AI work.

    Exit codes: 0 healthy (or degraded: warnings only), 1 unhealthy, 2 could not decide.
    """
    from dolmen.cli.validate_run import run_validate

    exit_with(run_validate(**args))
