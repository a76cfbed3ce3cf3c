"""The one place ``dolmen.jobs`` writes audit events (jobs.*, nodes.*, users.*, quota.*).

Submissions, cancels, users and quota changes fail closed: when the audit log
cannot be written the change is refused (AuditUnavailable, exit 4). Events the
supervisor records while a job already runs (GPU allocation, restart, failure)
cannot undo what the hardware did; there ``fail_closed=False`` returns the reason
so the supervisor keeps it in the job's own event list instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dolmen.errors import AuditUnavailable

ACTIONS = (
    "jobs.submit",
    "jobs.gpu_allocate",
    "jobs.restart",
    "jobs.cancel",
    "jobs.fail",
    "nodes.drain",  # a Slurm node drained or set down by dolmen (health check, watcher)
    "nodes.resume",  # a node dolmen drained, resumed once healthy again
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
