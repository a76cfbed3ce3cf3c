"""Audit tests run against temporary config and state folders, never /etc or /var/lib."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dolmen.audit.settings import AuditSettings, audit_settings


@pytest.fixture
def audit_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AuditSettings]:
    """DOLMEN_STATE_DIR / DOLMEN_CONFIG_DIR in tmp_path; yields the resulting settings."""
    monkeypatch.setenv("DOLMEN_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DOLMEN_CONFIG_DIR", str(tmp_path / "etc"))
    monkeypatch.delenv("DOLMEN_AUDIT_FAIL_OPEN", raising=False)
    (tmp_path / "etc").mkdir()
    yield audit_settings()


def write_config(settings: AuditSettings, body: str) -> AuditSettings:
    """Write ``[audit]`` settings to the test's dolmen.toml and reload them."""
    path = settings.trusted_keys.parent / "dolmen.toml"
    path.write_text("[audit]\n" + body)
    return audit_settings()


def log_lines(path: Path) -> list[bytes]:
    """The lines of a log file, newline included."""
    return path.read_bytes().splitlines(keepends=True)
