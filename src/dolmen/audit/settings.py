"""The ``[audit]`` section of dolmen.toml, with its defaults, as one frozen object.

[audit]
path = "/var/lib/dolmen/audit/audit.log"   # default: <state dir>/audit/audit.log
key = "/var/lib/dolmen/audit/keys/audit.key" # ed25519 signing key (file provider)
trusted_keys = "/etc/dolmen/audit-trusted-keys"
fail_open = false                          # or env DOLMEN_AUDIT_FAIL_OPEN=1
rotate_bytes = 104857600                   # 0: never by size
rotate_seconds = 0                         # 0: never by age
checkpoint_every = 1000                    # 0: only on demand

Checkpoints are signed by the site's key provider (``[keys] provider``, docs/keys.md):
with the file provider by the key above, with vault or pkcs11 by the provider's
signing key (a transit ed25519 key, an ed25519 pair in the token).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from dolmen.config import Config, load_config
from dolmen.errors import ConfigError
from dolmen.keys.settings import KeySettings, key_settings
from dolmen.paths import config_dir, state_dir

FAIL_OPEN_ENV = "DOLMEN_AUDIT_FAIL_OPEN"
DEFAULT_ROTATE_BYTES = 100 * 1024 * 1024
DEFAULT_CHECKPOINT_EVERY = 1000


@dataclass(frozen=True)
class AuditSettings:
    """Where the log, its key and its trust anchors are, and how it behaves."""

    path: Path
    key: Path
    trusted_keys: Path
    fail_open: bool = False
    rotate_bytes: int = DEFAULT_ROTATE_BYTES
    rotate_seconds: float = 0.0
    checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY
    keys: KeySettings = field(default_factory=KeySettings)  # who signs checkpoints ([keys])

    @property
    def spool_dir(self) -> Path:
        """Where exports keep their spools and cursors."""
        return self.path.parent / "spool"


_CACHE: dict[tuple[object, ...], AuditSettings] = {}


def audit_settings(config: Config | None = None) -> AuditSettings:
    """The settings from ``config`` (default: the site configuration) and the environment.

    Without ``config``, the result is reused while the environment and the site
    configuration file (its size and mtime) stay the same: record_event calls this
    for every event."""
    if config is not None:
        return _settings(config)
    key = _cache_key()
    cached = _CACHE.get(key)
    if cached is None:
        cached = _settings(load_config())
        _CACHE.clear()  # one entry: the current configuration
        _CACHE[key] = cached
    return cached


def _cache_key() -> tuple[object, ...]:
    cfg = config_dir() / "dolmen.toml"
    try:
        st = os.stat(cfg)
        stamp: tuple[int, ...] = (st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        stamp = ()
    env = tuple(os.environ.get(k) for k in ("DOLMEN_STATE_DIR", FAIL_OPEN_ENV))
    return (str(cfg), stamp, env)


def _settings(cfg: Config) -> AuditSettings:
    base = state_dir() / "audit"
    fail_open = bool(cfg.get("audit", "fail_open", False))
    env = os.environ.get(FAIL_OPEN_ENV, "").strip().lower()
    if env in ("1", "true", "yes", "on"):
        fail_open = True
    elif env in ("0", "false", "no", "off"):
        fail_open = False
    settings = AuditSettings(
        path=Path(cfg.get("audit", "path", None) or base / "audit.log"),
        key=Path(cfg.get("audit", "key", None) or base / "keys" / "audit.key"),
        trusted_keys=Path(
            cfg.get("audit", "trusted_keys", None) or config_dir() / "audit-trusted-keys"
        ),
        fail_open=fail_open,
        rotate_bytes=int(cfg.get("audit", "rotate_bytes", DEFAULT_ROTATE_BYTES)),
        rotate_seconds=float(cfg.get("audit", "rotate_seconds", 0)),
        checkpoint_every=int(cfg.get("audit", "checkpoint_every", DEFAULT_CHECKPOINT_EVERY)),
        keys=key_settings(cfg.sections.get("keys", {})),
    )
    for name in ("rotate_bytes", "rotate_seconds", "checkpoint_every"):
        if getattr(settings, name) < 0:
            raise ConfigError(f"[audit] {name} must not be negative", path=str(cfg.path or ""))
    return settings
