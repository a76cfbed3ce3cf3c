"""The containers step: the newest NGC PyTorch release this node's driver runs
(``dolmen containers resolve pytorch``), natively or by forward compatibility, and a
short GEMM benchmark inside it (setup/container_bench.py).

Found by ``OptionalStep`` (setup/steps.py) when dolmen.containers is in the build.
Exit codes as ``containers resolve``: a driver older than every release the knowledge
base knows fails the step (1: no NGC container runs on this node); a driver that could
not be read is unknown (2: never guessed) and the flow goes on. ``--bench-image`` names
the image instead (a site mirror, a local build): the resolution is then shown, not
needed.

The benchmark runs only on the node itself (not a host tree), only when the image is
already in docker's or podman's local store (never pulled: several GB) and the GPUs
answer (or ``--bench-device cpu``); otherwise the step is ``skipped`` naming what is
missing, and the next ``dolmen setup`` tries again.
"""

from __future__ import annotations

from dataclasses import dataclass

from dolmen.errors import ExitCode
from dolmen.setup.container_bench import Ready
from dolmen.setup.model import Context, Status, StepPlan, StepResult

NAME = "containers"
FRAMEWORK = "pytorch"


@dataclass(frozen=True)
class _Payload:
    """What apply needs: the image benchmarked (None: no release for this driver)."""

    image: str | None
    ready: Ready | None = None


def _resolution(ctx: Context) -> tuple[tuple[str, ...], str | None, Status | None]:
    """The release's lines, its image, and UNKNOWN / FAILED when there is none."""
    from dolmen.containers.hostinfo import read
    from dolmen.containers.resolve import resolve
    from dolmen.kb import load_kb

    info = ctx.cache.get("containers.hostinfo") or read(ctx.host)
    ctx.cache["containers.hostinfo"] = info
    kb = load_kb()
    r = resolve(
        kb.ngc,
        kb.cuda,
        FRAMEWORK,
        info.driver,
        datacenter=info.datacenter,
        driver_unknown=info.driver_unknown,
    )
    notes = tuple(f"note: {n}" for n in r.notes)
    if r.choice is None:
        lines = (f"no {FRAMEWORK} release: {r.refused}", *notes)
        if r.too_old:
            return lines, None, Status.FAILED
        by_hand = f"by hand: dolmen containers resolve {FRAMEWORK} --driver VERSION"
        return (*lines, by_hand), None, Status.UNKNOWN
    c = r.choice
    return (f"{c.release.image} ({c.mode}): {c.why}", *notes), c.release.image, None


def plan(ctx: Context) -> StepPlan:
    """The release and why, then whether the benchmark can run and what is missing."""
    from dolmen.setup.container_bench import describe, prepare

    lines, image, status = _resolution(ctx)
    named = ctx.options.bench_image
    if named is None and ctx.cache["containers.hostinfo"].no_gpu:
        return StepPlan(
            (
                "no NVIDIA GPU on this host (the PCI tree was read and shows none): "
                "no NGC GPU container to resolve",
                "a CPU benchmark in a container: --bench-image IMAGE --bench-device cpu",
            ),
            status=Status.SKIPPED,
        )
    if named is None and status is Status.UNKNOWN:
        return StepPlan(lines, status=Status.UNKNOWN)
    if named is None and status is Status.FAILED:
        return StepPlan(lines, payload=_Payload(None))
    if named is not None:
        lines = (*lines, f"benchmark image: {named} (--bench-image)")
        image = named
    assert image is not None
    if ctx.host.kind != "live":
        tail = (
            f"benchmark: not run on a {ctx.host.kind} ({ctx.host.root}): `dolmen setup` on "
            f"the node runs a short GEMM in {image} (through `dolmen containers run`)"
        )
        return StepPlan((*lines, tail), payload=_Payload(image))
    ready = prepare(ctx, image, ctx.cache["containers.hostinfo"])
    if isinstance(ready, str):
        return StepPlan((*lines, f"benchmark skipped: {ready}"), status=Status.SKIPPED)
    return StepPlan((*lines, describe(ready)), changes=True, payload=_Payload(image, ready))


def apply(ctx: Context, plan: StepPlan) -> StepResult:
    """The benchmark when it is ready; the failure of a driver too old for all."""
    from dolmen.setup.container_bench import run

    payload: _Payload = plan.payload
    if payload.image is None:
        return StepResult(NAME, Status.FAILED, plan.lines, int(ExitCode.UNHEALTHY))
    if payload.ready is None:
        return StepResult(NAME, Status.DONE, plan.lines)
    return run(ctx, payload.ready, plan.lines[:-1])
