"""The audit log's checkpoints signed by every provider, and key releases as audit events."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.audit import record_event
from dolmen.audit.event import parse_line
from dolmen.audit.keyrelease import audit_release
from dolmen.audit.settings import AuditSettings, audit_settings
from dolmen.cli.main import main
from dolmen.keys.providers import open_provider
from dolmen.keys.settings import KeySettings
from tests.keys.services import OpenBao, SoftHsmToken


def keys_toml(s: KeySettings) -> str:
    """The [keys] section of ``s`` (its non-default fields), for a test's dolmen.toml."""
    fields = {k: v for k, v in vars(s).items() if v is not None and v != getattr(KeySettings(), k)}
    return "[keys]\n" + "".join(
        f"{k} = {v!r}\n" if isinstance(v, float) else f'{k} = "{v}"\n' for k, v in fields.items()
    )


def _site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keys: KeySettings) -> AuditSettings:
    monkeypatch.setenv("DOLMEN_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DOLMEN_CONFIG_DIR", str(tmp_path / "etc"))
    monkeypatch.delenv("DOLMEN_AUDIT_FAIL_OPEN", raising=False)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "dolmen.toml").write_text(keys_toml(keys))
    settings = audit_settings()
    assert settings.keys == keys
    return settings


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _checkpoint_rotate_verify(settings: AuditSettings, capsys: pytest.CaptureFixture[str]) -> None:
    record_event("tune.apply", "profile:hpc")
    assert main(["audit", "checkpoint"]) == 0
    assert main(["audit", "key", "--rotate"]) == 0
    out = capsys.readouterr().out
    assert "epoch 1" in out and out.splitlines()[-1].startswith("ed25519 2 ")
    events = [parse_line(x) for x in _lines(settings.path)]
    assert [(e.checkpoint or {}).get("epoch") for e in events if e.checkpoint] == [1, 1, 2]
    assert not settings.key.exists()  # the file key was never made: the provider signed
    assert main(["audit", "verify"]) == 0, capsys.readouterr().out
    assert "3 signed checkpoint(s)" in capsys.readouterr().out


def test_checkpoints_signed_in_openbao(
    openbao: OpenBao,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _checkpoint_rotate_verify(_site(tmp_path, monkeypatch, openbao.settings()), capsys)


def test_checkpoints_signed_in_softhsm(
    softhsm_token: SoftHsmToken,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _checkpoint_rotate_verify(_site(tmp_path, monkeypatch, softhsm_token.settings()), capsys)


def test_every_release_is_an_audit_event(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = KeySettings(kek_file=tmp_path / "kek")
    settings = _site(tmp_path, monkeypatch, keys)
    provider = open_provider(settings.keys, on_release=audit_release)
    key, wrapped = provider.new_data_key(context="vol-7")
    assert not settings.path.exists()  # wrapping released nothing
    assert provider.unwrap(wrapped, purpose="crypt unlock /dev/loop0") == key
    (event,) = [parse_line(x) for x in _lines(settings.path)]
    assert (event.action, event.target) == ("keys.release", f"file:{tmp_path / 'kek'}")
    assert event.details == {
        "provider": "file",
        "key_ref": str(tmp_path / "kek"),
        "version": 1,
        "context": "vol-7",
        "purpose": "crypt unlock /dev/loop0",
    }


def test_no_release_when_the_log_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dolmen.errors import AuditUnavailable

    settings = _site(tmp_path, monkeypatch, KeySettings(kek_file=tmp_path / "kek"))
    provider = open_provider(settings.keys, on_release=audit_release)
    _key, wrapped = provider.new_data_key()
    settings.path.parent.mkdir(parents=True)
    settings.path.mkdir()  # a folder where the log should be: the log cannot be written
    with pytest.raises(AuditUnavailable):
        provider.unwrap(wrapped, purpose="t")
