"""Who seals a manifest and whom a verify trusts: the site's key, or a named one.

The site's signing key is the one that signs the audit log's checkpoints: the key
provider's (``[keys] provider``: the file key, a Vault/OpenBao transit ed25519 key, or a
PKCS#11 token's key pair; docs/keys.md), made on first use, and its trust store is
``[audit] trusted_keys`` (docs/audit.md): one key to pin off the host, not two.
``--provider`` picks another configured provider, ``--key FILE`` a dolmen key file;
``--trusted-keys FILE`` verifies against a copy of the trust store kept elsewhere (a
verifier that trusts the host it checks proves little).
"""

from __future__ import annotations

from pathlib import Path

from dolmen.config import Config
from dolmen.errors import InputError
from dolmen.keys import Signer
from dolmen.keys.trust import TrustStore, load_trusted_keys


def site_signer(config: Config, key: Path | None = None, provider: str | None = None) -> Signer:
    """The key that seals: ``key`` (a dolmen key file), else the signing key of
    ``provider`` (default: the site's, ``[keys] provider``)."""
    from dolmen.keys.file import FileKeyProvider

    if key is not None:
        return FileKeyProvider(key)
    from dataclasses import replace

    from dolmen.audit.checkpoint import open_signer
    from dolmen.audit.settings import audit_settings

    settings = audit_settings(config)
    if provider is not None:
        settings = replace(settings, keys=replace(settings.keys, provider=provider))
    return open_signer(settings)


def default_trust_path(config: Config) -> Path:
    """The site's trust store (``[audit] trusted_keys``)."""
    from dolmen.audit.settings import audit_settings

    return audit_settings(config).trusted_keys


def trust_store(config: Config, path: Path | None = None) -> tuple[TrustStore, Path]:
    """The trusted keys and where they came from; InputError when there are none (a
    verify without anchors cannot tell a sealed manifest from a forged one)."""
    where = path or default_trust_path(config)
    store = load_trusted_keys(where)
    if not store:
        raise InputError(
            "no trusted keys: a manifest's seal cannot be checked against nothing",
            path=str(where),
            hint="pass --trusted-keys FILE (a copy kept off this host), or pin the sealing "
            "key's trust line (dolmen audit key) in that file",
        )
    return store, where
