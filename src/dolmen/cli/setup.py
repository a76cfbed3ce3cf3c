"""``dolmen setup``: the first steps on a new node, planned first (docs/setup.md).

    dolmen setup --dry-run                 every step's plan; writes nothing
    dolmen setup                           plan, confirm and apply each step (a terminal)
    dolmen setup --yes --slurm-conf F --gres-conf G    non-interactively
    dolmen setup --skip tune --restart     leave a step out; run done steps again

Exit codes: 0 done, 1 validate found the node unhealthy or the containers step failed,
2 bad usage or a step could not decide (its input unread: nothing written), 3 the host
or the state folder refused, 4 the audit log or the tune journal could not be written,
130 interrupted.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from dolmen.cli.common import from_option
from dolmen.cli.jobs import backend_from, backend_options
from dolmen.cli.main import exit_with
from dolmen.errors import UsageError
from dolmen.setup.flow import Hooks
from dolmen.setup.model import StepPlan, StepResult


def _users(values: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``NAME`` or ``NAME:GROUP,GROUP``."""
    out = []
    for v in values:
        name, _, groups = v.partition(":")
        if not name:
            raise UsageError(f"--user {v!r}: no name", hint="write --user NAME[:GROUP,...]")
        out.append((name, tuple(g for g in groups.split(",") if g)))
    return tuple(out)


def _quotas(values: tuple[str, ...]) -> tuple[tuple[str, str, int], ...]:
    """``user:NAME=GPUS`` or ``group:NAME=GPUS``."""
    out = []
    for v in values:
        who, _, gpus = v.partition("=")
        kind, _, name = who.partition(":")
        if kind not in ("user", "group") or not name or not gpus.isdigit():
            raise UsageError(
                f"--quota {v!r}: not KIND:NAME=GPUS", hint="write --quota user:alice=8"
            )
        out.append((kind, name, int(gpus)))
    return tuple(out)


def _check_names(
    node: str | None,
    users: tuple[tuple[str, tuple[str, ...]], ...],
    quotas: tuple[tuple[str, str, int], ...],
) -> None:
    """Every name and figure refused before the first step, not after tune applied."""
    from dolmen.jobs.quota import check_gpus, check_name
    from dolmen.slurm.conf_gen import node_name

    if node is not None:
        try:
            node_name(node)
        except ValueError as e:
            raise UsageError(f"--node-name: {e}") from None
    for name, groups in users:
        check_name("user", name)
        for group in groups:
            check_name("group", group)
    for kind, name, gpus in quotas:
        check_name(kind, name)
        check_gpus(gpus)


def _check_device(pattern: str | None) -> None:
    """An absolute path with ``{index}``, on one line: it becomes gres.conf's File=."""
    if pattern is None:
        return
    try:
        ok = "{index}" in pattern and pattern.format(index=0).startswith("/")
    except (KeyError, IndexError, ValueError):
        ok = False
    if not ok or any(c.isspace() for c in pattern):
        raise UsageError(
            f"--device {pattern!r}: not an absolute path with {{index}}",
            hint="e.g. --device /dev/nvidia{index}",
        )


def _image(image: str | None) -> str | None:
    """--bench-image, refused before the first step when it is no image reference."""
    if image is not None:
        from dolmen.containers.plan import Request, validate

        validate(Request(image))
    return image


class _Terminal(Hooks):
    """Hooks that print each step and ask before a change (unless --yes)."""

    def __init__(self, yes: bool, as_json: bool) -> None:
        self.yes, self.quiet = yes, as_json
        self.shown: set[str] = set()

    def planned(self, step: Any, plan: StepPlan) -> None:
        self.shown = set(plan.lines)
        if not self.quiet:
            click.echo(f"== {step.name}: {step.title}")
            for line in plan.lines:
                click.echo(f"   {line}")

    def finished(self, step: Any, result: StepResult) -> None:
        shown, self.shown = self.shown, set()
        if self.quiet:
            return
        click.echo(f"-> {step.name}: {result.status.value}")
        for line in result.lines:
            if line not in shown:
                click.echo(f"   {line}")

    def confirm(self, step: Any, plan: StepPlan) -> bool:
        return self.yes or click.confirm(f"Apply {step.name}?", default=False)


@click.command()
@from_option
@click.option("--yes", "-y", is_flag=True, help="Apply every step without asking (scripts).")
@click.option("--dry-run", is_flag=True, help="Show every step's plan; write nothing.")
@click.option("--skip", multiple=True, metavar="STEP", help="Leave STEP out (repeatable).")
@click.option("--restart", is_flag=True, help="Run the steps already done again.")
@click.option("--json", "as_json", is_flag=True, help="Print the dolmen.setup/1 document.")
@click.option(
    "--level",
    type=click.Choice(["quick", "standard"]),
    default="standard",
    help="Validate level (default: standard).",
)
@click.option("--profile", default=None, help="Tune profile (default: the recommended one).")
@click.option(
    "--scheduler",
    type=click.Choice(["slurm", "kubernetes"]),
    default="slurm",
    help="Describe the node to Slurm (default) or Kubernetes.",
)
@click.option("--node-name", default=None, help="The node's scheduler name (default: hostname).")
@click.option("--slurm-conf", type=Path, default=None, help="Write the node line into FILE.")
@click.option("--gres-conf", type=Path, default=None, help="Write gres.conf lines into FILE.")
@click.option(
    "--gres",
    "gres_mode",
    type=click.Choice(["explicit", "nvml"]),
    default="explicit",
    help="gres.conf: File= and Cores= per GPU (default), or AutoDetect=nvml.",
)
@click.option(
    "--device",
    default=None,
    help="gres.conf File= pattern (default: /dev/nvidia{index} on the node).",
)
@click.option("--k8s-values", type=Path, default=None, help="Write gpu-operator values to FILE.")
@click.option(
    "--bench-image",
    default=None,
    metavar="IMAGE",
    help="Benchmark in IMAGE (a mirror, a local build) instead of the resolved NGC release.",
)
@click.option(
    "--bench-device",
    type=click.Choice(["cuda", "cpu"]),
    default="cuda",
    help="Where the containers step's benchmark runs (default: cuda, the GPUs).",
)
@click.option("--user", "users", multiple=True, metavar="NAME[:GROUPS]", help="Add a user.")
@click.option("--quota", "quotas", multiple=True, metavar="KIND:NAME=GPUS", help="Set a quota.")
@backend_options
def setup(source: str | None, **kw: Any) -> None:
    """Guided first steps: validate, stack, tune, containers, scheduler, users.

    Each step shows its plan, then applies it through dolmen's own paths (tune's
    engine, audited writes with a backup); a run that stopped resumes where it stopped.
    """
    from dolmen.host import open_host
    from dolmen.setup.flow import check_steps, run
    from dolmen.setup.model import Context, Options
    from dolmen.setup.tune_step import check_profile
    from dolmen.setup.writes import check_target

    skip = check_steps(kw["skip"])
    yes, dry_run, as_json = kw["yes"], kw["dry_run"], kw["as_json"]
    _check_device(kw["device"])
    users, quotas = _users(kw["users"]), _quotas(kw["quotas"])
    _check_names(kw["node_name"], users, quotas)
    check_profile(kw["profile"])
    for flag in ("slurm_conf", "gres_conf", "k8s_values"):
        if kw[flag] is not None:
            check_target(kw[flag], what=f"--{flag.replace('_', '-')}")
    if not (yes or dry_run or sys.stdin.isatty()):
        raise UsageError(
            "not a terminal: nothing to confirm the changes with",
            hint="pass --yes to apply, or --dry-run to see the plan",
        )
    host = open_host(source)
    click.get_current_context().call_on_close(host.close)
    if not dry_run and host.kind not in ("live", "tree"):
        raise UsageError(f"a {host.kind} cannot be set up; extract it or use --dry-run")
    options = Options(
        level=kw["level"],
        profile=kw["profile"],
        scheduler=kw["scheduler"],
        node_name=kw["node_name"],
        slurm_conf=kw["slurm_conf"],
        gres_conf=kw["gres_conf"],
        gres_mode=kw["gres_mode"],
        device=kw["device"],
        k8s_values=kw["k8s_values"],
        bench_image=_image(kw["bench_image"]),
        bench_device=kw["bench_device"],
        users=users,
        quotas=quotas,
        quota_store=lambda: backend_from(kw).quotas(),
    )
    report = run(
        Context(host, options),
        skip=skip,
        dry_run=dry_run,
        restart=kw["restart"],
        hooks=_Terminal(yes, as_json),
    )
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(), indent=2) + "\n")
    elif not dry_run:
        click.echo(f"state: {report.state}")
    exit_with(report.exit_code)
