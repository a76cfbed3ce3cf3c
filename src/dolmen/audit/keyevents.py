"""Key events for the audit log: releases (the ``on_release`` every caller of a key
provider passes) and changes (rotation, retirement), intent first then the result.

keys/ sits below audit/ and cannot write the log itself; a command that opens a
provider (``crypt unlock``, ``keys``) passes ``audit_release`` so that every unwrap
of a data key is one ``keys.release`` event: which provider, which KEK and version,
under which context, for what. The provider calls it after the unwrap and before it
hands the key over, so when the log cannot be written (fail closed) the caller never
gets the key.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from dolmen.audit.record import record_event
from dolmen.keys import KeyRelease

RELEASE_ACTION = "keys.release"
ACTIONS = (RELEASE_ACTION, "keys.rotate", "keys.retire")


def audit_release(release: KeyRelease) -> None:
    """Record one key release (raises AuditUnavailable when the log cannot be written)."""
    record_event(
        RELEASE_ACTION,
        f"{release.provider}:{release.key_ref}",
        details={
            "provider": release.provider,
            "key_ref": release.key_ref,
            "version": release.version,
            "context": release.context,
            "purpose": release.purpose,
        },
    )


@contextmanager
def key_change(action: str, target: str, details: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Record the intent of a key change (fail closed: AuditUnavailable refuses it before
    anything changes), run the body, then its result: success with what the body put in
    the yielded dict, or failure with the error (re-raised)."""
    assert action in ACTIONS, action
    record_event(action, target, outcome="unknown", details={"phase": "intent", **details})
    found: dict[str, Any] = {}
    try:
        yield found
    except Exception as e:
        why = {"phase": "result", **details, "error": str(e)[:300]}
        record_event(action, target, outcome="failure", details=why)
        raise
    record_event(action, target, details={"phase": "result", **details, **found})
