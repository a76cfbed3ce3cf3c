"""Seal with the site's key provider (``[keys] provider``: OpenBao transit, a SoftHSM2
token), verify against the trust line it pinned on first use."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.cli.main import main
from dolmen.keys.settings import KeySettings
from tests.integrity.roots import make_site
from tests.keys.services import OpenBao, SoftHsmToken
from tests.keys.test_audit_signing import keys_toml


def _seal_and_verify(
    keys: KeySettings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    site = make_site(tmp_path)
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "dolmen.toml").write_text(keys_toml(keys))
    monkeypatch.setenv("DOLMEN_CONFIG_DIR", str(etc))
    monkeypatch.setenv("DOLMEN_STATE_DIR", str(tmp_path / "state"))
    out = tmp_path / "m"
    assert main(["integrity", "seal", "-o", str(out), "--root", str(site.root)]) == 0
    sealed = capsys.readouterr().out
    assert (etc / "audit-trusted-keys").exists()  # trusted on first use
    assert main(["integrity", "verify", str(out)]) == 0, capsys.readouterr()
    assert capsys.readouterr().out.startswith("intact: 25 files")
    assert not (tmp_path / "state" / "audit" / "keys" / "audit.key").exists(), sealed
    # the provider signed, not a file key; a key file of another site is not trusted
    rc = main(["integrity", "verify", str(out), "--trusted-keys", str(site.trust)])
    assert rc == 1 and "does not hold" in capsys.readouterr().err


def test_seal_with_openbao_transit(
    openbao: OpenBao,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _seal_and_verify(openbao.settings(), tmp_path, monkeypatch, capsys)


def test_seal_with_a_softhsm_token(
    softhsm_token: SoftHsmToken,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _seal_and_verify(softhsm_token.settings(), tmp_path, monkeypatch, capsys)


def test_key_and_provider_together_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = make_site(tmp_path)
    argv = ["integrity", "seal", "-o", str(tmp_path / "m"), "--root", str(site.root)]
    assert main([*argv, "--key", str(site.key), "--provider", "vault"]) == 2
    assert "give one" in capsys.readouterr().err
