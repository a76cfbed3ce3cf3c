"""The key provider a crypt command uses, with every key release written to the audit log.

``--provider`` picks the provider (its fields come from the site's ``[keys]``); without it,
unlock and rotate use the provider named in the device's token, enrol the site's.
"""

from __future__ import annotations

from dataclasses import replace

from dolmen.audit import record_event
from dolmen.config import Config
from dolmen.keys import KeyProvider, KeyRelease
from dolmen.keys.providers import open_provider
from dolmen.keys.settings import key_settings

RELEASE_ACTION = "keys.release"


def audit_release(release: KeyRelease) -> None:
    """One audit event per unwrap: which KEK and version released a key, for what."""
    record_event(
        RELEASE_ACTION,
        f"key:{release.provider}/{release.key_ref}",
        details={
            "version": release.version,
            "context": release.context,
            "purpose": release.purpose,
        },
    )


def provider_for(config: Config, name: str | None) -> KeyProvider:
    """The provider ``name`` (else the site's ``[keys] provider``), releases audited."""
    settings = key_settings(config.sections.get("keys", {}))
    if name:
        settings = replace(settings, provider=name)
    return open_provider(settings, on_release=audit_release)
