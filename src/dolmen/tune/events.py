"""The one place the tune engine writes to the audit log (DESIGN.md "Audit log").

Every apply, rollback and recovery records an *intent* event (outcome
``unknown``, ``details.phase = "intent"``) before it changes anything, then
its result (``success`` or ``failure``). The intent comes first so that an
audit log that cannot be written (AuditUnavailable, exit code 4) refuses the
change before the host is touched, and so that a change killed halfway still
left a trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dolmen.audit import record_event

ACTIONS = (
    "tune.apply",
    "tune.rollback",
    "tune.recover",
    "tune.reapply",  # the active profile's non-persistent rows, at boot (tune/reapply.py)
    # dolmen net drives the same engine with its [nftables] setting (docs/net.md)
    "net.apply",
    "net.rollback",
    "net.recover",
    # dolmen nccl env --write, with its [nccl] setting (docs/topo.md)
    "nccl.apply",
    "nccl.rollback",
    "nccl.recover",
)


def intent(action: str, profile: str, details: Mapping[str, Any]) -> None:
    """Record that ``action`` is about to change the host; raises AuditUnavailable."""
    _record(action, profile, "unknown", {"phase": "intent", **details})


def result(action: str, profile: str, ok: bool, details: Mapping[str, Any]) -> None:
    """Record how ``action`` ended."""
    _record(action, profile, "success" if ok else "failure", {"phase": "result", **details})


def _record(action: str, profile: str, outcome: str, details: Mapping[str, Any]) -> None:
    assert action in ACTIONS, action
    target = f"policy:{profile}" if action.startswith("net.") else f"profile:{profile}"
    record_event(action, target, outcome=outcome, details=dict(details))
