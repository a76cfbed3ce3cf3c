"""Key releases as audit events: the ``on_release`` every caller of a key provider passes.

keys/ sits below audit/ and cannot write the log itself; a command that opens a
provider (``crypt unlock``, ``keys``) passes ``audit_release`` so that every unwrap
of a data key is one ``keys.release`` event: which provider, which KEK and version,
under which context, for what. The provider calls it after the unwrap and before it
hands the key over, so when the log cannot be written (fail closed) the caller never
gets the key.
"""

from __future__ import annotations

from dolmen.audit.record import record_event
from dolmen.keys import KeyRelease

RELEASE_ACTION = "keys.release"


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
