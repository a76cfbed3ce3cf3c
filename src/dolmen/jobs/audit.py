"""The one place ``dolmen.jobs`` writes audit events (jobs.*, users.*, quota.*).

Submissions, cancels, users and quota changes fail closed: when the audit log
cannot be written the change is refused (AuditUnavailable, exit 4). Events the
supervisor records while a job already runs (GPU allocation, restart, failure)
cannot undo what the hardware did; there ``fail_closed=False`` returns the reason
so the supervisor keeps it in the job's own event list instead.

A submission is two events with one target, ``job:<backend>/<name>`` (the job id
is not known before the system took the job): the intent (outcome ``unknown``,
``phase: intent``, the job's shape) before anything is handed to the system, then
the outcome (``phase: outcome``, ``result`` success with the ``job_id``, refused
or failed with the ``reason``), as tune's apply does (tune/events.py).

Users, quotas and cancels have the same shape (``change``): the input is checked
before any event, the intent is recorded fail closed, the change runs, and its real
outcome (success, refused, failed) follows; never "success" before the change.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from dolmen.errors import AuditUnavailable, DolmenError, UsageError

if TYPE_CHECKING:
    from dolmen.jobs.spec import JobSpec

ACTIONS = (
    "jobs.submit",
    "jobs.gpu_allocate",
    "jobs.restart",
    "jobs.cancel",
    "jobs.fail",
    "users.add",
    "users.remove",
    "quota.set",
    "quota.remove",
)
SUPERVISOR = "dolmen-jobs-supervisor"


def audit(
    action: str,
    target: str,
    *,
    outcome: str = "success",
    details: Mapping[str, Any] | None = None,
    actor: str | None = None,
    fail_closed: bool = True,
) -> str | None:
    """Record one event; None when recorded, else why it could not be (only with
    ``fail_closed=False``; otherwise AuditUnavailable). ``outcome``: success | failure."""
    assert action in ACTIONS, action
    from dolmen.audit import record_event

    try:
        record_event(action, target, outcome=outcome, details=dict(details or {}), actor=actor)
    except AuditUnavailable as e:
        if fail_closed:
            raise
        return str(e)
    return None


def submit_target(backend: str, name: str) -> str:
    """The target of both events of a submission."""
    return f"job:{backend}/{name}"


def submit_intent(backend: str, spec: JobSpec) -> None:
    """Record that ``spec`` is about to be handed to ``backend``; AuditUnavailable refuses it."""
    details: dict[str, Any] = {
        "phase": "intent",
        "backend": backend,
        "name": spec.name,
        "user": spec.user,
        "nodes": spec.nodes,
        "gpus_per_node": spec.gpus_per_node,
        "ranks": spec.world_size,
        "command": list(spec.command),
    }
    if spec.image:
        details["image"] = spec.image
    if spec.account:
        details["account"] = spec.account
    audit("jobs.submit", submit_target(backend, spec.name), outcome="unknown", details=details)


def submit_outcome(
    backend: str, spec: JobSpec, result: str, *, job_id: str = "", reason: str = ""
) -> str | None:
    """Record how the submission ended (``success``, ``refused``, ``failed``); None when
    recorded, else why it could not be (the system has the job, or refused it, already)."""
    assert result in ("success", "refused", "failed"), result
    details: dict[str, Any] = {"phase": "outcome", "result": result, "backend": backend}
    details.update({"job_id": job_id} if job_id else {"reason": reason})
    return audit(
        "jobs.submit",
        submit_target(backend, spec.name),
        outcome="success" if result == "success" else "failure",
        details=details,
        fail_closed=False,
    )


@contextmanager
def change(action: str, target: str, details: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Record the intent of ``action`` (AuditUnavailable: nothing changes), run the body,
    then its outcome: ``success``, ``refused`` (a UsageError or an over-quota from the
    system) or ``failed`` (anything else, re-raised). The body may add details for the
    outcome to the dict it is given. Validate the input before entering."""
    audit(action, target, outcome="unknown", details={"phase": "intent", **details})
    extra: dict[str, Any] = {}
    try:
        yield extra
    except BaseException as e:
        result = "refused" if isinstance(e, UsageError) else "failed"
        reason = e.message if isinstance(e, DolmenError) else f"{type(e).__name__}: {e}"
        audit(
            action,
            target,
            outcome="failure",
            details={"phase": "outcome", "result": result, "reason": reason, **details},
            fail_closed=False,
        )
        raise
    lost = audit(
        action,
        target,
        details={"phase": "outcome", "result": "success", **details, **extra},
        fail_closed=False,
    )
    if lost:
        extra["audit"] = f"not recorded: {lost}"
