"""The flow: each step planned, shown, confirmed, applied and remembered, in order.

validate -> stack -> tune -> containers -> scheduler -> users. A step recorded ``done``
for this host is not run again (``--restart`` forgets); ``--skip`` leaves a step out of
this run only. A step that fails stops the flow (an unhealthy node is not tuned nor
enrolled); an unknown scheduler description does not (nothing was written), but the
run's exit code says it (2). ``--dry-run`` plans every step and writes nothing, not
even the state file.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dolmen.errors import DolmenError, UsageError
from dolmen.setup import state as setup_state
from dolmen.setup.model import Context, Status, Step, StepPlan, StepResult
from dolmen.setup.scheduler import SchedulerStep
from dolmen.setup.steps import CONTAINERS, STACK, ValidateStep
from dolmen.setup.tune_step import TuneStep
from dolmen.setup.users_step import UsersStep

SCHEMA = "dolmen.setup/1"
STEPS: tuple[Step, ...] = (
    ValidateStep(),
    STACK,
    TuneStep(),
    CONTAINERS,
    SchedulerStep(),
    UsersStep(),
)
NAMES = tuple(s.name for s in STEPS)


def check_steps(names: Iterable[str], flag: str = "--skip") -> tuple[str, ...]:
    """The step names, each known; UsageError naming the valid ones otherwise."""
    out = []
    for n in names:
        for part in n.split(","):
            part = part.strip()
            if part not in NAMES:
                raise UsageError(
                    f"{flag} {part!r}: no such step", hint=f"the steps: {', '.join(NAMES)}"
                )
            out.append(part)
    return tuple(out)


@dataclass
class Report:
    """What one run did, step by step."""

    host: str
    dry_run: bool
    state: str
    results: list[StepResult] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """The first failure's code, else 2 when a step was unknown, else 0."""
        for r in self.results:
            if r.status is Status.FAILED:
                return r.exit_code
        return max((r.exit_code for r in self.results), default=0)

    def to_json(self) -> dict[str, Any]:
        """The ``dolmen.setup/1`` document."""
        return {
            "schema": SCHEMA,
            "host": self.host,
            "dry_run": self.dry_run,
            "state": self.state,
            "exit_code": self.exit_code,
            "steps": [r.to_json() for r in self.results],
        }


class Hooks:
    """How the flow talks to its caller (the CLI prints; tests collect)."""

    def planned(self, step: Step, plan: StepPlan) -> None:
        """A step's plan, before it runs."""

    def finished(self, step: Step, result: StepResult) -> None:
        """A step's result."""

    def confirm(self, step: Step, plan: StepPlan) -> bool:
        """Whether to apply a plan that changes something (``--yes``: always)."""
        return True


def run(
    ctx: Context,
    *,
    skip: Sequence[str] = (),
    dry_run: bool = False,
    restart: bool = False,
    hooks: Hooks | None = None,
    steps: Sequence[Step] = STEPS,
) -> Report:
    """Run the flow on ``ctx.host`` (see the module docstring)."""
    hooks = hooks or Hooks()
    st = setup_state.load(ctx.host)
    if restart:
        st.forget()
    if not dry_run:
        setup_state.writable(st)
        if restart:
            st.save()
    report = Report(ctx.host.hostname, dry_run, str(st.path))
    stopped: str | None = None
    for step in steps:
        result = _one(ctx, step, st, skip, dry_run, hooks, stopped)
        report.results.append(result)
        hooks.finished(step, result)
        if stopped is None and (
            result.status is Status.FAILED
            or (step.name == "validate" and result.status is Status.UNKNOWN)
        ):
            stopped = step.name
    return report


def _one(
    ctx: Context,
    step: Step,
    st: setup_state.SetupState,
    skip: Sequence[str],
    dry_run: bool,
    hooks: Hooks,
    stopped: str | None,
) -> StepResult:
    name = step.name
    if stopped is not None:
        return StepResult(name, Status.SKIPPED, (f"not reached: {stopped} stopped the flow",))
    if name in skip:
        return StepResult(name, Status.SKIPPED, ("--skip",))
    prior = st.status(name)
    if prior == Status.DONE.value:
        at = st.steps[name].get("at", "?")
        return StepResult(name, Status.DONE, (f"done at {at}: not run again (--restart runs it)",))
    plan = step.plan(ctx)
    if prior == "started":
        at = st.steps[name].get("at", "?")
        plan = StepPlan(
            (f"interrupted at {at}: running it again", *plan.lines),
            plan.changes,
            plan.status,
            plan.payload,
        )
    hooks.planned(step, plan)
    if dry_run:
        return StepResult(name, plan.status or Status.PLANNED, plan.lines, _code(plan.status))
    if plan.status is not None:
        st.record(name, plan.status.value, plan.lines)
        return StepResult(name, plan.status, plan.lines, _code(plan.status))
    if plan.changes and not hooks.confirm(step, plan):
        return StepResult(name, Status.SKIPPED, ("declined: nothing changed",))
    st.record(name, "started")
    try:
        result = step.apply(ctx, plan)
    except DolmenError as e:  # refused (not root, audit log full...): said, not "interrupted"
        st.record(name, Status.FAILED.value, (e.message,))
        raise
    st.record(name, result.status.value, result.lines, result.data)
    return result


def _code(status: Status | None) -> int:
    return 2 if status is Status.UNKNOWN else 0
