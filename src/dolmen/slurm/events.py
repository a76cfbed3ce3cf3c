"""The one place ``dolmen.slurm`` writes audit events: nodes it drains, sets down or
resumes (``nodes.drain``, ``nodes.resume``) and jobs its watcher requeues (``jobs.restart``).

Every change is two events, as every change dolmen makes (``acting``): the intent
before Slurm is asked (outcome ``unknown``, ``phase: intent``), then what Slurm did
(``phase: outcome``, ``result`` success or failed with the error): the health check's
drains and resumes and the watcher's set-downs and requeues alike. None blocks the
action: a health check must drain a sick node, and a watcher requeue a job, even when
the audit log cannot be written. The reason it could not be written is returned so that
the caller says so in its own output.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from dolmen.errors import AuditUnavailable

ACTIONS = ("nodes.drain", "nodes.resume", "jobs.restart")
WATCHER = "dolmen-jobs-supervisor"  # the actor of the local supervisor's events, too


def record(
    action: str,
    target: str,
    details: Mapping[str, Any],
    *,
    actor: str | None = None,
    outcome: str = "success",
) -> str | None:
    """Record one event; None when recorded, else why it could not be."""
    assert action in ACTIONS, action
    from dolmen.audit import record_event

    try:
        record_event(action, target, outcome=outcome, details=dict(details), actor=actor)
    except AuditUnavailable as e:
        return str(e)
    return None


def node_target(name: str) -> str:
    """The target of a node's events."""
    return f"slurm-node:{name}"


def intent(
    action: str, target: str, details: Mapping[str, Any], *, actor: str | None = None
) -> str | None:
    """Record that Slurm is about to be asked to ``action``; None, or why it was not."""
    more = {"phase": "intent", **details}
    return record(action, target, more, actor=actor, outcome="unknown")


def outcome(
    action: str,
    target: str,
    details: Mapping[str, Any],
    *,
    error: str | None = None,
    actor: str | None = None,
) -> str | None:
    """Record what Slurm did: success, or failed with ``error``; None, or why not."""
    if error is None:
        more = {"phase": "outcome", "result": "success", **details}
        return record(action, target, more, actor=actor)
    more = {"phase": "outcome", "result": "failed", "error": error, **details}
    return record(action, target, more, actor=actor, outcome="failure")


T = TypeVar("T")


def acting(
    action: str,
    target: str,
    details: Mapping[str, Any],
    do: Callable[[], T],
    *,
    actor: str | None = None,
) -> tuple[T, str | None]:
    """Intent, ``do()``, then its outcome (failed and re-raised when it raises): what
    ``do`` returned, and None or why the events could not be written."""
    lost = intent(action, target, details, actor=actor)
    try:
        result = do()
    except BaseException as e:
        error = getattr(e, "message", None) or str(e)
        outcome(action, target, details, error=error, actor=actor)
        raise
    return result, outcome(action, target, details, actor=actor) or lost
