"""``stack.lock``: this node runs the stack its fleet locked (``[validate] stack_lock``).

One finding per component of the lock (and per component only this host has): the
fleet's one node whose NCCL, driver or VBIOS differs fails on that component, with the
lock's and this host's versions as evidence. A component this host does not show is
unknown (never a pass); one the lock did not know is a warning.
"""

from __future__ import annotations

from pathlib import Path

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown, warned
from dolmen.errors import InputError
from dolmen.stack.diff import Drift, diff
from dolmen.stack.lockfile import load
from dolmen.stack.observe import observe
from dolmen.values.busid import gpu_subject

REMEDY = (
    "Bring the node to the lock: dolmen stack plan <lock> shows the commands, dolmen stack "
    "apply <lock> runs them (or drain it until it is); if the change is intended, lock a "
    "reference node again (dolmen stack lock -o FILE) and ship that lock."
)


def subject(entry: Drift) -> str:
    """The finding subject of a component: its GPU, its HCA, its toolkit folder, else
    ``stack:<id>``."""
    kind, _, rest = entry.id.partition(":")
    if kind == "vbios" and rest:
        return gpu_subject(rest)
    if kind == "nic-firmware" and rest:
        return f"ib:{rest}"
    if kind == "cuda" and rest:
        return f"cuda:{rest}"
    return f"stack:{entry.id}"


@check(
    "stack.lock",
    title="The software stack is the one locked for this fleet ([validate] stack_lock)",
    level=Level.STANDARD,
    needs=("os", "stack", "gpu", "infiniband"),
    remedy=REMEDY,
    source="dolmen stack lock (docs/stack.md): DGX OS ships one validated stack per release",
)
def stack_lock(ctx: Context) -> list[Outcome]:
    """Reads the lock named by ``[validate] stack_lock``, observes this host's stack (facts,
    package database, module and tool versions, file hashes) and compares them."""
    path = ctx.config.get("validate", "stack_lock")
    if path is None:
        return [skipped("host", 'no stack lock configured ([validate] stack_lock = "FILE")')]
    try:
        lock = load(Path(str(path)))
    except InputError as err:
        return [unknown("host", f"the stack lock cannot be read: {err.message}", lock=str(path))]
    result = diff(lock, observe(ctx.host, ctx.store))
    out: list[Outcome] = []
    for e in result.entries:
        ev = {"component": e.id, "locked": e.locked, "here": e.here, "lock": str(path)}
        what = f"{e.kind} {e.id.partition(':')[2]}".strip() if ":" in e.id else e.kind
        if e.status == "same":
            shown = e.here or "unknown in the lock and here"
            out.append(passed(subject(e), f"{what} {shown} as locked", **ev))
        elif e.status == "changed":
            out.append(failed(subject(e), f"{what}: " + "; ".join(e.differences), **ev))
        elif e.status == "missing":
            out.append(failed(subject(e), f"{what} {e.locked} locked, none here: {e.reason}", **ev))
        elif e.status == "extra":
            out.append(warned(subject(e), f"{what} {e.here} here, not in the lock", **ev))
        else:
            why = e.reason or "not shown here"
            out.append(unknown(subject(e), f"{what} {e.locked} locked, unknown here: {why}", **ev))
    return out
