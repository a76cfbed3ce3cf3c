"""``dolmen containers``: which NGC release this host runs, and GPU containers started right.

``resolve`` exits 0 with a release, 1 when the driver is older than every release the
knowledge base knows, 2 when it cannot decide (the driver is unknown: never guessed; no
release on the ``--cuda`` asked for).
``run`` exits with the container's own status (2 for bad input, 3 when the plan cannot
start, 4 when the launch cannot be audited); ``--dry-run`` prints the command only
(exit 3 when the plan names a problem a real run would refuse).
Imports stay inside the commands: ``run --dry-run`` is timed against a bare Python start
(bench/containers_dry_run.py).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from dolmen.cli.common import from_option

if TYPE_CHECKING:
    from dolmen.containers.plan import Plan, Request
    from dolmen.containers.resolve import Choice, Resolution

_FRAMEWORKS = ("pytorch", "tensorflow", "jax", "tritonserver")


@click.group()
def containers() -> None:
    """NGC releases for this driver, and GPU container commands for this host's runtime."""


def _emit_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")


@containers.command()
@click.argument("framework", type=click.Choice(_FRAMEWORKS))
@click.option("--cuda", metavar="X[.Y[.Z]]", help="Only releases built on this CUDA version.")
@click.option("--driver", metavar="VERSION", help="Resolve for this driver, not the host's.")
@click.option(
    "--datacenter/--no-datacenter",
    default=None,
    help="Say whether the GPUs are data-center ones (default: from their names).",
)
@from_option
@click.option("--json", "as_json", is_flag=True, help="Print dolmen.containers.resolve/1.")
def resolve(
    framework: str,
    cuda: str | None,
    driver: str | None,
    datacenter: bool | None,
    source: str | None,
    as_json: bool,
) -> None:
    """The newest NGC FRAMEWORK release this host's driver runs, and what it ships."""
    from dolmen.cli.main import exit_with
    from dolmen.containers.resolve import resolve as resolve_release
    from dolmen.errors import UsageError
    from dolmen.kb import load_kb
    from dolmen.kb.cuda import DriverVersion

    # Before any read: an empty --driver was falsy, and the host's driver stood in for it.
    if driver is not None and DriverVersion.parse(driver) is None:
        raise UsageError(
            f"--driver {driver!r} is not a driver version; expected digits and dots like 535.54.03",
            hint="give the version nvidia-smi prints, or leave --driver out to read the host's",
        )
    gpus: tuple[str, ...] = ()
    why = "the driver version could not be read"
    if driver is None or datacenter is None:
        from dolmen.containers.hostinfo import read
        from dolmen.host import open_host

        with open_host(source) as host:
            info = read(host)
        gpus, why = info.gpus, info.driver_unknown
        driver = driver or info.driver
        datacenter = info.datacenter if datacenter is None else datacenter
    kb = load_kb()
    r = resolve_release(
        kb.ngc, kb.cuda, framework, driver, datacenter=datacenter, cuda=cuda, driver_unknown=why
    )
    if as_json:
        _emit_json(_resolution_doc(r, gpus))
    else:
        _print_resolution(r, gpus)
    if r.choice is None:
        exit_with(1 if r.too_old else 2)


def _choice_doc(c: Choice | None) -> dict[str, Any] | None:
    if c is None:
        return None
    r = c.release
    return {
        "release": r.release,
        "image": r.image,
        "mode": c.mode,
        "min_driver": c.min_driver,
        "compat_branch": c.compat_branch,
        "why": c.why,
        "ships": {
            "framework": r.version,
            "cuda": r.cuda,
            "cudnn": r.cudnn,
            "nccl": r.nccl,
            "tensorrt": r.tensorrt,
            "ubuntu": r.ubuntu,
        },
        "verified": r.verified,
        "unverified": list(r.unverified),
        "source": r.source,
        "note": r.note,
    }


def _resolution_doc(r: Resolution, gpus: tuple[str, ...]) -> dict[str, Any]:
    return {
        "schema": "dolmen.containers.resolve/1",
        "framework": r.framework,
        "driver": r.driver,
        "gpus": list(gpus),
        "datacenter": r.datacenter,
        "cuda": r.cuda,
        "choice": _choice_doc(r.choice),
        "native": _choice_doc(r.native),
        "refused": r.refused,
        "notes": list(r.notes),
    }


def _print_resolution(r: Resolution, gpus: tuple[str, ...]) -> None:
    if r.choice is None:
        click.echo(f"no {r.framework} release: {r.refused}", err=True)
        for n in r.notes:
            click.echo(f"  note: {n}", err=True)
        return
    c = r.choice
    rel = c.release
    click.echo(f"{rel.image}  ({c.mode})")
    click.echo(f"  {c.why}")
    rows = [
        (r.framework, rel.version),
        ("CUDA", rel.cuda),
        ("cuDNN", rel.cudnn),
        ("NCCL", rel.nccl),
        ("TensorRT", rel.tensorrt),
        ("Ubuntu", rel.ubuntu),
    ]
    for label, value in rows:
        shown = value or "not recorded"
        mark = (
            " *"
            if label.lower() in rel.unverified
            or (label == r.framework and "framework_version" in rel.unverified)
            else ""
        )
        click.echo(f"  {label:<12} {shown}{mark}")
    if rel.unverified:
        click.echo("  * recalled, not checked against the release notes")
    if rel.note:
        click.echo(f"  note: {rel.note}")
    if r.native is not None:
        click.echo(f"  without forward compatibility: {r.native.release.image} ({r.native.why})")
    for n in r.notes:
        click.echo(f"  note: {n}")
    click.echo(f"  source: {rel.source}")


@containers.command(context_settings={"allow_interspersed_args": False})
@click.argument("image")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option("--runtime", help="docker, podman, apptainer, singularity, enroot or pyxis.")
@click.option("--gpus", default="all", show_default=True, help="all, none, or 0,1 / GPU-<uuid>.")
@click.option("--shm-size", help="A sized /dev/shm (e.g. 16g) instead of --ipc=host.")
@click.option("--checkpoint", metavar="DIR", help="Host folder mounted at /checkpoints.")
@click.option("--mount", "mounts", multiple=True, metavar="SRC:DST[:ro]", help="Bind mount.")
@click.option("--env", "envs", multiple=True, metavar="NAME=VALUE", help="Set a variable.")
@click.option("--network", help="docker/podman network (none, host...).")
@click.option("--name", help="Container name.")
@click.option("--dry-run", is_flag=True, help="Print the command; start nothing.")
@click.option("--json", "as_json", is_flag=True, help="With --dry-run: dolmen.containers.plan/1.")
def run(
    image: str,
    command: tuple[str, ...],
    runtime: str | None,
    gpus: str,
    shm_size: str | None,
    checkpoint: str | None,
    mounts: tuple[str, ...],
    envs: tuple[str, ...],
    network: str | None,
    name: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Start IMAGE [-- COMMAND] with what GPU jobs need, for the runtime this host has."""
    from dolmen.cli.main import exit_with
    from dolmen.containers.plan import Request, plan
    from dolmen.containers.site import gather
    from dolmen.errors import UsageError
    from dolmen.host.live import LiveHost

    if as_json and not dry_run:
        raise UsageError(
            "--json goes with --dry-run", hint="dolmen containers run --dry-run --json"
        )
    if command[:1] == ("--",):  # click keeps the separator once IMAGE ended the options
        command = command[1:]
    req = Request(image, command, runtime, gpus, shm_size, checkpoint, mounts, envs, network, name)
    host = LiveHost()
    p = plan(req, gather(host))
    if dry_run:
        if as_json:
            _emit_json(_plan_doc(p, req))
        else:
            _print_plan(p)
        if p.problems:
            exit_with(3)  # what a real run would refuse
        return
    if checkpoint is not None and not host.is_dir(checkpoint.lstrip("/")):
        raise UsageError(f"--checkpoint {checkpoint}: no such folder", hint="create it first")
    from dolmen.containers.launch import launch

    for n in p.notes:
        click.echo(f"dolmen: {n}", err=True)
    exit_with(launch(p, req, host.environ()))


def _plan_doc(p: Plan, req: Request) -> dict[str, Any]:
    return {
        "schema": "dolmen.containers.plan/1",
        "runtime": p.runtime,
        "image": req.image,
        "argv": list(p.argv),
        "gpu_mode": p.gpu_mode,
        "notes": list(p.notes),
        "problems": list(p.problems),
    }


def _print_plan(p: Plan) -> None:
    import shlex

    for n in p.notes:
        click.echo(f"# {n}")
    for problem in p.problems:
        click.echo(f"# PROBLEM: {problem}")
    click.echo(shlex.join(p.argv))
