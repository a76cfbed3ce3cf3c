"""Start a planned container and audit it: the intent before, the outcome after.

A launch is two events with one target, ``container:<runtime>/<image>`` (action
``containers.run``): the intent (outcome ``unknown``, ``phase: intent``, the argv and
what the plan adapted) before anything starts, recorded fail closed (an audit log that
cannot be written refuses the launch, exit 4); then the outcome (``phase: outcome``,
success for exit status 0, else failure with the status or why it could not start).
Never "success" before the container ran.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dolmen.containers.plan import Plan, Request
from dolmen.errors import EnvironmentProblem

ACTION = "containers.run"


def target(plan: Plan, req: Request) -> str:
    """The audit target of both events of a launch."""
    return f"container:{plan.runtime}/{req.image}"


def launch(plan: Plan, req: Request, environ: Mapping[str, str], *, log: Path | None = None) -> int:
    """Run ``plan`` in the foreground; its exit status. The container's output goes to
    this terminal, or appended to ``log`` (stdout and stderr, for a caller that reads
    the result back: ``dolmen setup``'s benchmark)."""
    from dolmen.audit import record_event
    from dolmen.host.process import SpawnError, spawn

    if plan.problems:
        raise EnvironmentProblem(
            f"cannot start the container: {plan.problems[0]}",
            hint="dolmen containers run --dry-run shows the whole plan",
        )
    details: dict[str, Any] = {
        "runtime": plan.runtime,
        "image": req.image,
        "argv": list(plan.argv),
        "gpus": req.gpus,
        "gpu_mode": plan.gpu_mode,
        "notes": list(plan.notes),
    }
    where = target(plan, req)
    record_event(ACTION, where, outcome="unknown", details={"phase": "intent", **details})
    try:
        child = spawn(plan.argv, env=environ, log=log, die_with_parent=False)
    except SpawnError as e:
        record_event(
            ACTION, where, outcome="failure", details={"phase": "outcome", "reason": str(e)}
        )
        raise EnvironmentProblem(str(e), hint=f"is {plan.runtime} installed?") from e
    try:
        rc = child.wait()
    except KeyboardInterrupt:
        import signal

        child.signal(signal.SIGTERM)
        rc = child.wait(30)
        rc = 130 if rc is None else rc
    status = 128 - rc if rc is not None and rc < 0 else rc  # a signal: 128 + its number
    record_event(
        ACTION,
        where,
        outcome="success" if status == 0 else "failure",
        details={"phase": "outcome", "exit_status": status},
    )
    return 1 if status is None else status
