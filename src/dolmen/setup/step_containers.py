"""The containers step: the newest NGC PyTorch release this node's driver runs
(``dolmen containers resolve pytorch``), natively or by forward compatibility.

Found by ``OptionalStep`` (setup/steps.py) when dolmen.containers is in the build. It
changes nothing. The benchmark inside the container is named, not run: the image is
several GB from nvcr.io and the run needs the GPUs; the command is printed whole.
Exit codes as ``containers resolve``: a driver older than every release the knowledge
base knows fails the step (1: no NGC container runs on this node); a driver that could
not be read is unknown (2: never guessed) and the flow goes on."""

from __future__ import annotations

from dolmen.errors import ExitCode
from dolmen.setup.model import Context, Status, StepPlan, StepResult

NAME = "containers"
FRAMEWORK = "pytorch"
_SMOKE = "python -c 'import torch; print(torch.cuda.device_count(), torch.cuda.get_device_name())'"


def plan(ctx: Context) -> StepPlan:
    """The release and why; unknown when the driver could not be read."""
    from dolmen.containers.hostinfo import read
    from dolmen.containers.resolve import resolve
    from dolmen.kb import load_kb

    info = read(ctx.host)
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
            return StepPlan(lines, payload=None)
        by_hand = f"by hand: dolmen containers resolve {FRAMEWORK} --driver VERSION"
        return StepPlan((*lines, by_hand), status=Status.UNKNOWN)
    c = r.choice
    lines = (
        f"{c.release.image} ({c.mode}): {c.why}",
        *notes,
        f"benchmark in it: dolmen containers run {c.release.image} -- {_SMOKE}",
    )
    return StepPlan(lines, payload=c.release.image)


def apply(ctx: Context, plan: StepPlan) -> StepResult:
    """Nothing to change: the resolution, or the failure of a driver too old for all."""
    if plan.payload is None:
        return StepResult(NAME, Status.FAILED, plan.lines, int(ExitCode.UNHEALTHY))
    return StepResult(NAME, Status.DONE, plan.lines)
