"""``record_event``: what every command that changes the host or the cluster calls.

Fail closed by default (Vault's audit devices: a request that cannot be audited is
refused): when the log cannot be written, AuditUnavailable (exit code 4) stops the
change. With ``[audit] fail_open = true`` or ``DOLMEN_AUDIT_FAIL_OPEN=1``, one loud
line goes to stderr and the change goes on, unaudited.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from dolmen.audit.actor import current_actor
from dolmen.audit.event import CHECKPOINT_ACTION, Actor, AuditEvent, validate_request
from dolmen.audit.log import AppendResult, AuditLog
from dolmen.audit.settings import AuditSettings, audit_settings
from dolmen.compat import UTC
from dolmen.errors import AuditUnavailable
from dolmen.host import Host


@dataclass(frozen=True)
class EventRequest:
    """One event to record (the arguments of ``record_event``), for ``record_events``."""

    action: str
    target: str
    outcome: str = "success"
    details: Mapping[str, Any] | None = None
    actor: str | None = None


def record_event(
    action: str,
    target: str,
    *,
    outcome: str = "success",
    details: Mapping[str, Any] | None = None,
    actor: str | None = None,
) -> AuditEvent:
    """Append one event to the audit log, durably (fsync'd) before returning it.

    ``action`` is dotted (``tune.apply``, ``jobs.submit``), ``target`` names what was
    changed, ``outcome`` is success | failure | unknown, ``details`` any JSON-able
    mapping, ``actor`` a service principal (default: the real user behind sudo).
    Raises AuditUnavailable (exit code 4) when the log cannot be written, unless the
    site is configured fail-open; ValueError for a malformed action or outcome.
    """
    return record_events([EventRequest(action, target, outcome, details, actor)])[0]


def record_events(
    requests: Iterable[EventRequest],
    *,
    settings: AuditSettings | None = None,
    host: Host | None = None,
) -> list[AuditEvent]:
    """Append several events with one lock and one fsync (group commit), in order."""
    reqs = list(requests)
    for r in reqs:
        validate_request(r.action, r.target, r.outcome)
        if r.action == CHECKPOINT_ACTION:
            raise ValueError(f"{CHECKPOINT_ACTION} is reserved: use dolmen.audit.checkpoint()")
    settings = settings or audit_settings()
    host = host or _live_host()
    now = _now()
    actors: dict[str | None, Actor] = {}
    pending = []
    for r in reqs:
        if r.actor not in actors:
            actors[r.actor] = current_actor(host, r.actor)
        pending.append(
            AuditEvent(
                action=r.action,
                target=r.target,
                outcome=r.outcome,
                actor=actors[r.actor],
                host=host.hostname,
                timestamp=now,
                details=dict(r.details or {}),
                pid=os.getpid(),
            )
        )
    try:
        result = _append(settings, host, pending)
    except AuditUnavailable as e:
        if not settings.fail_open:
            raise
        _warn(
            f"WARNING: audit log unavailable, {len(pending)} change(s) NOT audited "
            f"(fail_open is set): {e.message}"
        )
        return pending
    return result.events


def checkpoint(settings: AuditSettings | None = None, host: Host | None = None) -> AuditEvent:
    """Sign the log's current head now (``dolmen audit checkpoint``); raises on failure."""
    settings = settings or audit_settings()
    host = host or _live_host()
    result = _append(settings, host, [], checkpoint_now=True)
    return result.checkpoints[-1]


def _append(
    settings: AuditSettings, host: Host, pending: list[AuditEvent], *, checkpoint_now: bool = False
) -> AppendResult:
    def make_checkpoint(sequence: int, head: str) -> AuditEvent:
        # imported here: most appends sign nothing, and `cryptography` takes a while to load
        from dolmen.audit.checkpoint import checkpoint_event, open_signer

        return checkpoint_event(
            open_signer(settings),
            sequence,
            head,
            host=host.hostname,
            actor=current_actor(host),
            timestamp=_now(),
            pid=os.getpid(),
        )

    def make_recover(note: dict[str, object]) -> AuditEvent:
        details = {k: v for k, v in note.items() if k != "message"}
        return AuditEvent(
            action="audit.recover",
            target="audit-log",
            outcome="success",
            actor=current_actor(host),
            host=host.hostname,
            timestamp=_now(),
            details=details,
            pid=os.getpid(),
        )

    log = AuditLog(
        settings.path, rotate_bytes=settings.rotate_bytes, rotate_seconds=settings.rotate_seconds
    )
    result = log.append(
        pending,
        checkpoint_every=settings.checkpoint_every,
        make_checkpoint=make_checkpoint,
        make_recover=make_recover,
        checkpoint_now=checkpoint_now,
    )
    for warning in result.warnings:
        _warn(f"warning: {warning}")
    return result


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _live_host() -> Host:
    from dolmen.host.live import LiveHost

    return LiveHost()


def _warn(line: str) -> None:
    print(f"dolmen: {line}", file=sys.stderr)
