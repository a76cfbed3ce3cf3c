"""``dolmen.audit``: the tamper-evident audit trail (docs/audit.md).

Every command that changes the host or the cluster records what it did::

    from dolmen.audit import record_event

    record_event("tune.apply", "sysctl:vm.swappiness", details={"from": 60, "to": 10})

The event is in the log, fsync'd, when the call returns; when the log cannot be
written the call raises dolmen.errors.AuditUnavailable (exit code 4) and the
change must not go ahead, unless the site configured fail-open. Read-only
commands record nothing.
"""

from __future__ import annotations

from dolmen.audit.event import Actor, AuditEvent
from dolmen.audit.record import EventRequest, checkpoint, record_event, record_events

__all__ = [
    "Actor",
    "AuditEvent",
    "EventRequest",
    "checkpoint",
    "record_event",
    "record_events",
]
