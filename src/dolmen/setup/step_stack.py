"""The stack step: the node's software stack as a lock (``dolmen stack lock``), kept in
the state folder beside the flow's own record, so that the node's first-day stack can be
compared with later (``dolmen stack diff``) and restored (``dolmen stack plan``/``apply``).

Found by ``OptionalStep`` (setup/steps.py) when dolmen.stack is in the build. Plan reads
the stack and names what is not known (never read as absent); apply writes the lock
atomically, only when it differs from the one already there."""

from __future__ import annotations

from pathlib import Path

from dolmen.host import Host
from dolmen.setup.model import Context, Status, StepPlan, StepResult
from dolmen.setup.state import state_path

NAME = "stack"
_SHOWN = 8  # components listed under the plan (`dolmen stack lock` prints them all)


def lock_path(host: Host) -> Path:
    """``<state>/setup/stack.toml`` for this machine; a host tree's beside its own record."""
    record = state_path(host)
    if record.name == "state.json":
        return record.with_name("stack.toml")
    return record.with_suffix(".stack.toml")


def plan(ctx: Context) -> StepPlan:
    """The lock of this host; a lock already written and equal is nothing to change."""
    from dolmen.fsutil import read_regular
    from dolmen.stack.lockfile import dumps
    from dolmen.stack.observe import observe

    lock = observe(ctx.host)
    text = dumps(lock)
    known = [c for c in lock.components if c.known]
    unknown = [c for c in lock.components if not c.known]
    lines = [f"{len(known)} of {len(lock.components)} components known ({lock.host})"]
    lines += [f"  {c.id}: {c.version}" for c in known[:_SHOWN]]
    if len(known) > _SHOWN:
        lines.append(f"  ... and {len(known) - _SHOWN} more (`dolmen stack lock`)")
    lines += [f"  unknown: {c.id}: {c.reason or 'not shown'}" for c in unknown[:_SHOWN]]
    lines += [f"note: {n}" for n in lock.notes]
    if not known:
        lines.append("nothing of the stack could be read: no lock written")
        return StepPlan(tuple(lines), status=Status.UNKNOWN)
    target = lock_path(ctx.host)
    try:
        same = read_regular(target, 4 << 20).decode() == text
    except (OSError, UnicodeDecodeError, ValueError):
        same = False  # absent or unreadable: written anew
    if same:
        lines.append(f"lock {target}: as written before, nothing to change")
        return StepPlan(tuple(lines))
    lines.append(f"write the lock to {target} (`dolmen stack diff` compares a later stack)")
    return StepPlan(tuple(lines), changes=True, payload=(target, text))


def apply(ctx: Context, plan: StepPlan) -> StepResult:
    """Write the lock (fsutil.write_output: atomic, a refused folder is one line, exit 3)."""
    from dolmen.fsutil import write_output

    if plan.payload is not None:
        target, text = plan.payload
        target.parent.mkdir(parents=True, exist_ok=True)
        write_output(target, text.encode(), what="stack lock")
        return StepResult(NAME, Status.DONE, (plan.lines[0], f"wrote {target}"))
    return StepResult(NAME, Status.DONE, plan.lines)
