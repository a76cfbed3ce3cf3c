"""The file KeyProvider: wrap/unwrap with a KEK ring, versions, rotation, hostile inputs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dolmen.errors import ExitCode
from dolmen.keys import KeyProblem, KeyRelease, WrappedKey
from dolmen.keys.filekek import FileProvider, format_ring, parse_ring
from dolmen.keys.providers import open_provider
from dolmen.keys.settings import KeySettings, key_settings


def _provider(tmp_path: Path, releases: list[KeyRelease] | None = None) -> FileProvider:
    settings = KeySettings(kek_file=tmp_path / "keys" / "kek", signing_key_file=tmp_path / "s.key")
    provider = open_provider(settings, on_release=None if releases is None else releases.append)
    assert isinstance(provider, FileProvider)
    return provider


def test_wrap_unwrap_round_trip_and_release(tmp_path: Path) -> None:
    releases: list[KeyRelease] = []
    p = _provider(tmp_path, releases)
    key, wrapped = p.new_data_key(context="node1")
    assert len(key) == 32 and key not in wrapped.blob
    assert os.stat(p.kek_path).st_mode & 0o777 == 0o600
    assert os.stat(p.kek_path.parent).st_mode & 0o777 == 0o700
    again = WrappedKey.from_json(json.loads(json.dumps(wrapped.to_json())))
    assert again == wrapped
    assert p.unwrap(again, purpose="test unlock") == key
    assert releases == [KeyRelease("file", str(p.kek_path), 1, "node1", "test unlock")]


def test_rotate_rewrap_and_min_decryption_version(tmp_path: Path) -> None:
    p = _provider(tmp_path)
    key, old = p.new_data_key(context="vol-a")
    assert p.rotate() == 2
    new = p.rewrap(old)
    assert new.version == 2 and p.unwrap(new, purpose="t") == key
    assert p.unwrap(old, purpose="t") == key  # old versions still open
    p.set_min_decryption_version(2)
    with pytest.raises(KeyProblem, match="below the minimum decryption version 2"):
        p.unwrap(old, purpose="t")
    status = p.status()
    assert status.keys[0].latest == 2 and status.keys[0].min_decryption == 2


@pytest.mark.parametrize(
    "change",
    [
        lambda w: WrappedKey(w.provider, w.key_ref, w.version, "node2", w.blob),
        lambda w: WrappedKey(w.provider, w.key_ref, w.version, w.context, w.blob[:-1] + b"\0"),
        lambda w: WrappedKey(w.provider, w.key_ref, w.version, w.context, w.blob[:20]),
    ],
    ids=["wrong-context", "tampered", "truncated"],
)
def test_hostile_blobs_are_refused(tmp_path: Path, change: object) -> None:
    p = _provider(tmp_path)
    _key, wrapped = p.new_data_key(context="node1")
    assert callable(change)
    with pytest.raises(KeyProblem, match="does not open") as info:
        p.unwrap(change(wrapped), purpose="t")
    assert info.value.exit_code == ExitCode.ENVIRONMENT


def test_relabelled_version_and_other_provider(tmp_path: Path) -> None:
    p = _provider(tmp_path)
    _key, wrapped = p.new_data_key()
    p.rotate()
    relabelled = WrappedKey("file", wrapped.key_ref, 2, "", wrapped.blob)
    with pytest.raises(KeyProblem, match="does not open"):
        p.unwrap(relabelled, purpose="t")
    with pytest.raises(KeyProblem, match="no KEK version 9"):
        p.unwrap(WrappedKey("file", wrapped.key_ref, 9, "", wrapped.blob), purpose="t")
    with pytest.raises(KeyProblem, match="vault provider"):
        p.unwrap(WrappedKey("vault", "dolmen", 1, "", wrapped.blob), purpose="t")


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_a_kek_readable_by_others_is_refused(tmp_path: Path, mode: int) -> None:
    p = _provider(tmp_path)
    _key, wrapped = p.new_data_key()
    os.chmod(p.kek_path, mode)
    with pytest.raises(KeyProblem, match=f"mode {mode:04o}") as info:
        p.unwrap(wrapped, purpose="t")
    assert "chmod 600" in (info.value.hint or "")
    assert p.status().answers is False


def test_no_kek_yet(tmp_path: Path) -> None:
    p = _provider(tmp_path)
    status = p.status()
    assert status.keys == () and "no KEK yet" in status.detail and status.answers
    with pytest.raises(KeyProblem, match="no key-encryption key at"):
        p.unwrap(WrappedKey("file", str(p.kek_path), 1, "", b"x" * 40), purpose="t")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "not a dolmen KEK file"),
        ("dolmen-kek/1\n", "holds no KEK version"),
        ("dolmen-kek/1\n1 AAAA\n", "is 32 bytes"),
        ("dolmen-kek/1\n1 !!!\n", "not base64"),
        ("dolmen-kek/1\nx y z\n", "expected '<version> <base64 key>'"),
        ("dolmen-kek/1\nmin-decryption-version: 0\n", "must be 1 or more"),
        ("dolmen-kek/1\n1 " + "A" * 43 + "=\n1 " + "A" * 43 + "=\n", "appears twice"),
    ],
)
def test_parse_ring_refuses_junk(text: str, message: str) -> None:
    with pytest.raises(KeyProblem, match=message):
        parse_ring(text, "kek")


def test_ring_round_trip() -> None:
    ring = {1: bytes(32), 3: bytes(range(32))}
    assert parse_ring(format_ring(ring, 3).decode(), "kek") == (ring, 3)


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"type": "other"},
        {"type": "dolmen-wrapped-key/1", "provider": "x"},
        {"type": "dolmen-wrapped-key/1", "provider": "file", "key_ref": "", "version": 1},
        {"type": "dolmen-wrapped-key/1", "provider": "file", "key_ref": "k", "version": True},
        {
            "type": "dolmen-wrapped-key/1",
            "provider": "file",
            "key_ref": "k",
            "version": 1,
            "context": "",
            "blob": "%%%",
        },
        {
            "type": "dolmen-wrapped-key/1",
            "provider": "file",
            "key_ref": "k",
            "version": 1,
            "context": "",
            "blob": "",
        },
    ],
)
def test_wrapped_key_from_json_refuses_junk(data: object) -> None:
    with pytest.raises(KeyProblem):
        WrappedKey.from_json(data)


def test_settings_from_section(tmp_path: Path) -> None:
    s = key_settings({"provider": "FILE", "kek_file": str(tmp_path / "k"), "timeout": 2})
    assert s.provider == "file" and s.kek_path == tmp_path / "k" and s.timeout == 2.0
    with pytest.raises(KeyProblem, match="unknown key provider"):
        open_provider(KeySettings(provider="nope"))


def test_file_signer_and_its_rotation(tmp_path: Path) -> None:
    from dolmen.keys import verify_signature
    from dolmen.keys.file import FileKeyProvider

    p = _provider(tmp_path)
    with pytest.raises(KeyProblem, match="no signing key at"):
        p.signer()
    FileKeyProvider.generate(p.signing_key_path)
    assert p.signer().epoch == 1
    new = p.rotate_signer()
    assert new.epoch == 2 and verify_signature(new.public_key, b"m", new.sign(b"m"))
    assert [k.purpose for k in p.status().keys] == ["sign"]
