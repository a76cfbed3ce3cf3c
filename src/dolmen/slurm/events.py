"""The one place ``dolmen.slurm`` writes audit events: nodes it drains, sets down or
resumes (``nodes.drain``, ``nodes.resume``) and jobs its watcher requeues (``jobs.restart``).

Each is recorded after Slurm acted (the event says what happened) and never
blocks the action: a health check must drain a sick node, and a watcher requeue
a job, even when the audit log cannot be written. The reason it could not be
written is returned so that the caller says so in its own output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dolmen.errors import AuditUnavailable

ACTIONS = ("nodes.drain", "nodes.resume", "jobs.restart")
WATCHER = "dolmen-jobs-supervisor"  # the actor of the local supervisor's events, too


def record(
    action: str, target: str, details: Mapping[str, Any], *, actor: str | None = None
) -> str | None:
    """Record one event; None when recorded, else why it could not be."""
    assert action in ACTIONS, action
    from dolmen.audit import record_event

    try:
        record_event(action, target, details=dict(details), actor=actor)
    except AuditUnavailable as e:
        return str(e)
    return None


def node_target(name: str) -> str:
    """The target of a node's events."""
    return f"slurm-node:{name}"
