"""The ``[keys]`` section of dolmen.toml as one frozen object (docs/keys.md).

    [keys]
    provider = "file"                        # file | vault | pkcs11
    kek_file = "/var/lib/dolmen/keys/kek"    # file: the AES-256 KEK ring (0600)
    signing_key_file = "/var/lib/dolmen/audit/keys/audit.key"  # file: ed25519 signing key
    vault_address = "https://vault.example:8200"
    vault_token_file = "/etc/dolmen/vault-token"   # never on a command line
    vault_mount = "transit"
    vault_key = "dolmen"                     # transit key (derived: contexts per node/volume)
    vault_signing_key = "dolmen-signing"     # transit ed25519 key
    vault_ca_cert = "/etc/dolmen/vault-ca.pem"
    vault_client_cert = "..."                # mutual TLS, with vault_client_key
    vault_namespace = ""
    pkcs11_module = "/usr/lib/softhsm/libsofthsm2.so"
    pkcs11_token = "dolmen"                  # token label
    pkcs11_pin_file = "/etc/dolmen/pkcs11-pin"
    pkcs11_key_id = "646f6c6d656e"           # CKA_ID (hex) of the KEK; versions appended
    pkcs11_signing_key_id = "646f6c6d656e2d73"
    timeout = 5                              # seconds a provider may take to answer

keys/ sits beside config.py in the layer table and cannot import it: config.py holds
this section's schema and ranges (refused at load), and callers build the settings
with ``key_settings(config.sections.get("keys", {}))``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dolmen.paths import state_dir


@dataclass(frozen=True)
class KeySettings:
    """Which provider, and the fields of each (only the chosen provider's are read)."""

    provider: str = "file"
    kek_file: Path | None = None  # None: <state dir>/keys/kek
    signing_key_file: Path | None = None  # None: <state dir>/audit/keys/audit.key
    vault_address: str = ""
    vault_token_file: Path | None = None
    vault_mount: str = "transit"
    vault_key: str = "dolmen"
    vault_signing_key: str = "dolmen-signing"
    vault_ca_cert: Path | None = None
    vault_client_cert: Path | None = None
    vault_client_key: Path | None = None
    vault_namespace: str = ""
    pkcs11_module: Path | None = None
    pkcs11_token: str = ""
    pkcs11_pin_file: Path | None = None
    pkcs11_key_id: str = "646f6c6d656e"  # "dolmen"
    pkcs11_signing_key_id: str = "646f6c6d656e2d73"  # "dolmen-s"
    timeout: float = 5.0

    @property
    def kek_path(self) -> Path:
        """The file provider's KEK ring."""
        return self.kek_file or state_dir() / "keys" / "kek"

    @property
    def signing_key_path(self) -> Path:
        """The file provider's signing key (the audit log's key by default)."""
        return self.signing_key_file or state_dir() / "audit" / "keys" / "audit.key"


_PATHS = (
    "kek_file",
    "signing_key_file",
    "vault_token_file",
    "vault_ca_cert",
    "vault_client_cert",
    "vault_client_key",
    "pkcs11_module",
    "pkcs11_pin_file",
)


def key_settings(section: Mapping[str, Any] | None = None) -> KeySettings:
    """The settings from a ``[keys]`` table already checked by config.py (types, ranges)."""
    raw = dict(section or {})
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _PATHS:
            values[key] = Path(value)
        elif key == "timeout":
            values[key] = float(value)
        elif key == "provider":
            values[key] = str(value).lower()
        else:
            values[key] = value
    return KeySettings(**values)
