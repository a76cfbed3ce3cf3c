"""The read-only and not-yet-built steps: validate, and the parts other issues build
(stack, containers), which say so instead of pretending."""

from __future__ import annotations

import importlib
import importlib.util

from dolmen.errors import ExitCode
from dolmen.setup.model import Context, Status, StepPlan, StepResult

LEVELS = ("quick", "standard")
_SHOWN = 5  # problems listed under an unhealthy verdict (validate lists them all)


class ValidateStep:
    """Run the checks first: a node that fails them is not tuned nor given to a scheduler."""

    name = "validate"
    title = "Validate the node"

    def plan(self, ctx: Context) -> StepPlan:
        """What will be checked; the checks themselves run in apply (they may take a while)."""
        level = ctx.options.level
        return StepPlan((f"run the {level} checks on {ctx.host.hostname} (dolmen validate)",))

    def apply(self, ctx: Context, plan: StepPlan) -> StepResult:
        """The verdict: healthy or degraded go on; unhealthy stops (exit 1), undecided too
        (exit 2: an undecided node is not enrolled on faith)."""
        from dolmen.checks.model import Level
        from dolmen.checks.suite import validate
        from dolmen.checks.verdict import Health
        from dolmen.config import load_config

        v = validate(ctx.host, level=Level.parse(ctx.options.level), config=load_config())
        counts = ", ".join(f"{n} {s}" for s, n in v.counts.items() if n)
        lines = [f"{v.health.value} ({counts})"]
        lines += [f"{f.status.value}: {f.check} {f.subject}: {f.summary}" for f in v.problems()][
            :_SHOWN
        ]
        if v.health in (Health.HEALTHY, Health.DEGRADED):
            return StepResult(self.name, Status.DONE, tuple(lines))
        lines.append("fix what it names (dolmen validate shows all), or pass --skip validate")
        if v.health is Health.UNHEALTHY:
            return StepResult(self.name, Status.FAILED, tuple(lines), int(ExitCode.UNHEALTHY))
        return StepResult(self.name, Status.UNKNOWN, tuple(lines), int(ExitCode.UNDECIDED))


class OptionalStep:
    """A step whose part another issue builds (``dolmen stack``, ``dolmen containers``).

    It looks for the part's package; absent, it says ``not in this build: dolmen <name>``
    and the flow goes on. Present, it runs ``dolmen.setup.step_<name>`` (a module with
    ``plan(ctx)`` and ``apply(ctx, plan)``, added when the part is wired in); present but
    not wired, it names the commands to run by hand."""

    def __init__(self, name: str, title: str, package: str, by_hand: str) -> None:
        self.name = name
        self.title = title
        self.package = package
        self.by_hand = by_hand

    def _wired(self) -> object | None:
        try:
            if importlib.util.find_spec(f"dolmen.setup.step_{self.name}") is None:
                return None
        except ModuleNotFoundError:
            return None
        return importlib.import_module(f"dolmen.setup.step_{self.name}")

    def present(self) -> bool:
        """Whether the part's package is in this build."""
        try:
            return importlib.util.find_spec(self.package) is not None
        except ModuleNotFoundError:
            return False

    def plan(self, ctx: Context) -> StepPlan:
        """The wired step's plan, or why there is none."""
        command = self.package.replace("dolmen.", "dolmen ")
        if not self.present():
            return StepPlan((f"not in this build: {command}",), status=Status.UNAVAILABLE)
        hook = self._wired()
        if hook is None:
            return StepPlan(
                (f"{command} is in this build but not wired into setup: {self.by_hand}",),
                status=Status.UNAVAILABLE,
            )
        result: StepPlan = getattr(hook, "plan")(ctx)  # noqa: B009 - a module found at run time
        return result

    def apply(self, ctx: Context, plan: StepPlan) -> StepResult:
        """The wired step's apply (plan() returned a status otherwise, so this never runs)."""
        hook = self._wired()
        assert hook is not None
        result: StepResult = getattr(hook, "apply")(ctx, plan)  # noqa: B009
        return result


STACK = OptionalStep(
    "stack",
    "Lock and plan the software stack",
    "dolmen.stack",
    "run `dolmen stack lock` then `dolmen stack plan`",
)
CONTAINERS = OptionalStep(
    "containers",
    "Resolve the NGC container for this driver and benchmark in it",
    "dolmen.containers",
    "run `dolmen containers resolve` then a short `dolmen bench` inside it",
)
