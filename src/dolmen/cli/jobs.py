"""``dolmen jobs``: submit, plan, status, list, logs and cancel multi-node GPU jobs.

Exit codes (docs/jobs.md): 0 done; 1 ``status`` of a failed job; 2 bad input
(unknown backend, more GPUs than any node has, a missing command, a bad job
file); 3 refused by the environment (over quota, a dead backend service, no
kubeconfig); 4 audit log unwritable (nothing submitted).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from dolmen.cli.main import exit_with

F = TypeVar("F", bound=Callable[..., Any])
# Spec fields the flags of the same name set (docs/jobs-slurm.md).
SITE_FLAGS = ("partition", "qos", "constraint", "mem", "cpus_per_task", "exclusive", "reservation")
CONTEXT = {"ignore_unknown_options": True, "allow_interspersed_args": False}


def backend_options(f: F) -> F:
    """--backend, and one flag per option a backend declares with one (``Backend.OPTIONS``)."""
    from dolmen.jobs.backend import flag_options

    for opt, names in reversed(flag_options()):
        assert opt.flag and opt.param  # flag_options gives only options with a flag
        f = click.option(
            opt.flag, opt.param, default=None, metavar=opt.metavar, help=f"{names}: {opt.help}."
        )(f)
    return click.option(
        "--backend",
        default=None,
        metavar="NAME",
        help="local | slurm | kubernetes (default: [jobs] backend of dolmen.toml, else local).",
    )(f)


def _spec_options(f: F) -> F:
    options: list[tuple[tuple[str, ...], dict[str, Any]]] = [
        (("--file", "jobfile"), {"metavar": "TOML", "help": "Read the job from a TOML file."}),
        (("--name",), {"help": "Job name (default: the command's name)."}),
        (("--nodes",), {"type": int, "help": "Nodes (local: rank groups on this host)."}),
        (("--gpus-per-node",), {"type": int, "help": "GPUs per node (0: a CPU job)."}),
        (("--procs-per-node",), {"type": int, "help": "Ranks per node (default: 1 per GPU)."}),
        (("--image",), {"help": "Container image (kubernetes, or Slurm with pyxis)."}),
        (("--checkpoint-dir",), {"metavar": "DIR", "help": "Checkpoint folder."}),
        (
            ("--workdir",),
            {
                "metavar": "DIR",
                "help": "The ranks' working folder (Slurm with --image: default this one).",
            },
        ),
        (("--max-restarts",), {"type": int, "help": "Restarts after faults (default 0)."}),
        (("--time-limit",), {"metavar": "T", "help": "30m, 2h, 1:30:00, 2-00:00:00."}),
        (("--account",), {"help": "Account (Slurm) or group the job is charged to."}),
        (("--elastic",), {"is_flag": True, "default": None, "help": "May shrink on faults."}),
        (("--partition",), {"help": "Slurm partition (a,b: any of them)."}),
        (("--qos",), {"help": "Slurm quality of service."}),
        (("--constraint",), {"metavar": "FEATURES", "help": "Slurm node features (ib&h100)."}),
        (("--mem",), {"metavar": "SIZE", "help": "Memory per node: 500G (Kubernetes: request)."}),
        (("--cpus-per-task",), {"type": int, "help": "CPUs per rank (Kubernetes: request)."}),
        (("--exclusive",), {"is_flag": True, "default": None, "help": "Whole nodes (Slurm)."}),
        (("--reservation",), {"help": "Slurm reservation to run in."}),
    ]
    for decl, kw in reversed(options):
        f = click.option(*decl, **kw)(f)
    return click.argument("command", nargs=-1, type=click.UNPROCESSED)(f)


@click.group()
def jobs() -> None:
    """Run multi-node GPU jobs on local, Slurm or Kubernetes, with recovery from checkpoints."""


@jobs.command(context_settings=CONTEXT)
@_spec_options
@backend_options
@click.option("--json", "as_json", is_flag=True, help="Print the job's status as JSON.")
def submit(as_json: bool, **kw: Any) -> None:
    """Submit a job: dolmen jobs submit --nodes 2 --gpus-per-node 4 -- python train.py"""
    backend, spec = _resolve(kw)
    _warn(backend.plan(spec).warnings)
    status = backend.submit(spec)
    if as_json:
        _print_json(_status_json(status))
        return
    click.echo(
        f"submitted job {status.job_id} ({status.backend}): {spec.name}, {spec.world_size} ranks"
        f" on {spec.nodes} node(s), {status.state.value}"
    )


@jobs.command(context_settings=CONTEXT)
@_spec_options
@backend_options
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def plan(as_json: bool, **kw: Any) -> None:
    """Print exactly what would be submitted (process table, sbatch script, manifests)."""
    backend, spec = _resolve(kw)
    p = backend.plan(spec)
    _warn(p.warnings)
    if as_json:
        _print_json(
            {
                "schema": "dolmen.jobs.plan/1",
                "backend": p.backend,
                "summary": p.summary,
                "spec": dataclasses.asdict(p.spec),
                "artifacts": dict(p.artifacts),
                "warnings": list(p.warnings),
            }
        )
        return
    click.echo(f"# {p.summary}")
    for name, text in p.artifacts.items():
        click.echo(f"# --- {name}")
        click.echo(text, nl=not text.endswith("\n"))


@jobs.command()
@click.argument("job_id")
@backend_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status(job_id: str, as_json: bool, **kw: Any) -> None:
    """Show one job; exits 1 when it failed."""
    from dolmen.jobs.backend import JobState

    st = backend_from(kw).status(job_id)
    if as_json:
        _print_json(_status_json(st))
    else:
        click.echo(f"job {st.job_id} ({st.backend}) {st.name}: {st.state.value}")
        if st.reason:
            click.echo(f"  reason: {st.reason}")
        click.echo(f"  restarts: {st.restarts}")
        if st.nodes:
            click.echo(f"  nodes: {', '.join(st.nodes)}")
        for k, v in st.details.items():
            click.echo(f"  {k}: {v}")
    if st.state is JobState.FAILED:
        exit_with(1)


@jobs.command(name="list")
@backend_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_(as_json: bool, **kw: Any) -> None:
    """List the backend's jobs, newest first."""
    rows = backend_from(kw).list()
    if as_json:
        _print_json({"schema": "dolmen.jobs.list/1", "jobs": [s.to_json() for s in rows]})
        return
    click.echo(f"{'ID':<8} {'NAME':<20} {'STATE':<11} {'RESTARTS':>8}  REASON")
    for s in rows:
        click.echo(
            f"{s.job_id:<8} {s.name[:20]:<20} {s.state.value:<11} {s.restarts:>8}  {s.reason}"
        )


@jobs.command()
@click.argument("job_id")
@click.option("-f", "--follow", is_flag=True, help="Keep printing until the job ends.")
@click.option("--rank", type=int, default=None, help="Only this rank's output.")
@backend_options
def logs(job_id: str, follow: bool, rank: int | None, **kw: Any) -> None:
    """Print a job's output (every rank, prefixed, or one rank)."""
    for line in backend_from(kw).logs(job_id, rank=rank, follow=follow):
        click.echo(line)
        if follow:
            sys.stdout.flush()


@jobs.command()
@click.argument("job_id")
@backend_options
def cancel(job_id: str, **kw: Any) -> None:
    """Stop a job (its ranks get SIGTERM, then SIGKILL)."""
    st = backend_from(kw).cancel(job_id)
    click.echo(f"job {st.job_id}: {st.state.value}" + (f" ({st.reason})" if st.reason else ""))


# --- helpers -----------------------------------------------------------------------------
def backend_from(kw: dict[str, Any], name: str | None = None) -> Any:
    """The backend named by --backend (or the job file, or the site config), made with the
    options it declares: each from its flag, else from its ``[jobs]`` key of dolmen.toml.
    A flag of another backend's option is a UsageError (it would do nothing)."""
    from dolmen.config import load_config
    from dolmen.errors import UsageError
    from dolmen.jobs.backend import backend_class, flag_options

    config = load_config()
    chosen = kw.get("backend") or name or str(config.get("jobs", "backend", "local"))
    cls = backend_class(chosen)
    own = {o.flag for o in cls.OPTIONS}
    stray = [
        f"{o.flag} ({names})"
        for o, names in flag_options()
        if kw.get(o.param or "") is not None and o.flag not in own
    ]
    if stray:
        raise UsageError(
            f"{', '.join(stray)}: not an option of the {chosen} backend",
            hint=f"the {chosen} backend takes: "
            + (", ".join(o.flag for o in cls.OPTIONS if o.flag) or "no flags"),
        )
    options: dict[str, Any] = {}
    for opt in cls.OPTIONS:
        value = kw.get(opt.param) if opt.param else None
        if value is None and opt.config:
            value = config.get(opt.section, opt.config)
        if value is not None:
            options[opt.name] = value
    return cls(**options)


def _resolve(kw: dict[str, Any]) -> tuple[Any, Any]:
    from dolmen.config import load_config
    from dolmen.jobs.jobfile import load_jobfile, merge
    from dolmen.values.duration import parse_time_limit as parse_duration

    jobfile = load_jobfile(kw["jobfile"]) if kw.get("jobfile") else None
    default_gpus = load_config().get("jobs", "default_gpus_per_node")
    overrides = {
        "name": kw.get("name"),
        "command": tuple(kw["command"]) or None,
        "nodes": kw.get("nodes"),
        "gpus_per_node": kw.get("gpus_per_node"),
        "procs_per_node": kw.get("procs_per_node"),
        "image": kw.get("image"),
        "checkpoint_dir": kw.get("checkpoint_dir"),
        "workdir": kw.get("workdir"),
        "max_restarts": kw.get("max_restarts"),
        "time_limit_s": parse_duration(kw["time_limit"]) if kw.get("time_limit") else None,
        "account": kw.get("account"),
        "elastic": kw.get("elastic"),
        **{k: kw.get(k) for k in SITE_FLAGS},
    }
    if overrides["gpus_per_node"] is None and not (jobfile and "gpus_per_node" in jobfile.fields):
        overrides["gpus_per_node"] = default_gpus
    spec = merge(jobfile, overrides)
    backend = backend_from(kw, jobfile.backend if jobfile else None)
    if backend.name == "slurm" and spec.image:
        spec = _container_workdir(spec)
    return backend, spec


def _container_workdir(spec: Any) -> Any:
    """A Slurm job in a container runs where it was submitted, as one without does
    (sbatch's own default folder): the folder is mounted into the container at the same
    path and made its working folder, so ``python train.py`` finds train.py there (the
    image's WORKDIR, NGC's /workspace, does not hold it). A relative --workdir is taken
    from this folder."""
    import os

    workdir = os.path.abspath(spec.workdir or os.getcwd())
    return dataclasses.replace(spec, workdir=workdir)


def _status_json(st: Any) -> dict[str, Any]:
    """The ``dolmen.jobs.status/1`` document of one job."""
    return {"schema": "dolmen.jobs.status/1", **st.to_json()}


def _warn(warnings: Any) -> None:
    for text in warnings:
        click.echo(f"dolmen: warning: {text}", err=True)


def _print_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")
