"""The key provider a crypt command uses, with every key release written to the audit log.

``--provider`` picks the provider (its fields come from the site's ``[keys]``); without it,
unlock and rotate use the provider named in the device's token, enrol the site's.
"""

from __future__ import annotations

from dataclasses import replace

from dolmen.audit.keyevents import audit_release
from dolmen.config import Config
from dolmen.keys import KeyProvider
from dolmen.keys.providers import open_provider
from dolmen.keys.settings import key_settings


def provider_for(config: Config, name: str | None) -> KeyProvider:
    """The provider ``name`` (else the site's ``[keys] provider``), releases audited."""
    settings = key_settings(config.sections.get("keys", {}))
    if name:
        settings = replace(settings, provider=name)
    return open_provider(settings, on_release=audit_release)
