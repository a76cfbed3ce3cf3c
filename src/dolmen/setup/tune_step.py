"""The tune step: the recommended (or named) profile, planned and applied by tune's engine
(journal, read-back, rollback on a refusal, audit events): exactly `dolmen tune apply`."""

from __future__ import annotations

from typing import Any

from dolmen.errors import ExitCode, UsageError
from dolmen.setup.model import Context, Status, StepPlan, StepResult

_SHOWN = 12


def check_profile(name: str | None) -> None:
    """``--profile NAME`` refused before the first step: unknown (ConfigError naming the
    valid ones) or a read-only reference that is never applied (UsageError)."""
    if name is None:
        return
    from dolmen.tune.profile import load_profile

    if load_profile(name).read_only:
        raise UsageError(
            f"--profile {name}: a read-only reference of stock values; it is never applied",
            hint="name a profile to apply (dolmen tune profiles), or leave --profile out",
        )


class TuneStep:
    """Recommend, plan, apply."""

    name = "tune"
    title = "Tune the node (dolmen tune recommend, plan, apply)"

    def plan(self, ctx: Context) -> StepPlan:
        """The profile and its changes; a profile already active or an interrupted apply
        is said, and left to `dolmen tune`."""
        from dolmen.tune.planner import plan_profile
        from dolmen.tune.profile import load_profile
        from dolmen.tune.recommend import read_traits, recommend
        from dolmen.tune.verify import tune_status

        host, name = ctx.host, ctx.options.profile
        lines: list[str] = []
        if name is None:
            rec = recommend(read_traits(host))
            name = rec.profile
            lines.append(f"recommended profile: {rec.profile} ({rec.why})")
        prof = load_profile(name)
        if prof.read_only:  # --profile was refused before the first step (check_profile)
            lines.append(f"nothing to tune: {prof.name} is a read-only reference of stock values")
            return StepPlan(tuple(lines), status=Status.SKIPPED)
        st = tune_status(host)
        if st.interrupted:
            lines.append("an earlier tune apply was interrupted: run `dolmen tune recover`")
            return StepPlan(tuple(lines), status=Status.UNKNOWN)
        if st.active is not None and st.active != prof.name:
            lines.append(f"{st.active} is active: left as is (`dolmen tune apply {name}` switches)")
            return StepPlan(tuple(lines), status=Status.SKIPPED)
        result = plan_profile(host, prof)
        steps = result.steps
        if not steps:
            lines.append(f"{prof.name}: the host holds it already, nothing to change")
            return StepPlan(tuple(lines), payload=None)
        lines.append(f"{prof.name}: {len(steps)} changes")
        for c in steps[:_SHOWN]:
            lines.append(f"  {c.target.name}: {_short(c.current)} -> {_short(c.target.desired)}")
        if len(steps) > _SHOWN:
            lines.append(f"  ... and {len(steps) - _SHOWN} more (`dolmen tune plan {name}`)")
        return StepPlan(tuple(lines), changes=True, payload=(result, prof.path))

    def apply(self, ctx: Context, plan: StepPlan) -> StepResult:
        """tune's apply_plan; its exit codes (130 signal, 4 state disk, 3 host refused)."""
        from dolmen.tune.engine import apply_plan, require_root
        from dolmen.tune.verify import tune_status

        if plan.payload is None:
            return StepResult(self.name, Status.DONE, plan.lines)
        result, path = plan.payload
        require_root(ctx.host, result)
        res = apply_plan(ctx.host, result, tune_status(ctx.host).folder, extra=_extra(path))
        lines = [*plan.lines[:1], f"applied {res.profile}: {len(res.steps)} settings"]
        if res.ok:
            return StepResult(self.name, Status.DONE, tuple(lines))
        code = (
            130 if res.interrupted else ExitCode.AUDIT if res.state_error else ExitCode.ENVIRONMENT
        )
        why = res.interrupted or res.state_error or res.error or "refused"
        rolled = " (rolled back)" if res.rollback is not None and res.rollback.complete else ""
        return StepResult(
            self.name, Status.FAILED, (f"tune apply failed: {why}{rolled}",), int(code)
        )


def _short(value: str | None) -> str:
    """A value on one line: a file's content is shown by its size (`dolmen tune plan`
    prints it whole)."""
    if value is None:
        return "(none)"
    if "\n" in value.rstrip("\n") or len(value) > 40:
        return f"({len(value.splitlines())} lines)"
    return repr(value.rstrip("\n"))


def _extra(path: Any) -> dict[str, Any]:
    return {"profile_path": path, "by": "dolmen setup"}
