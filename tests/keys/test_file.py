"""The file key provider: ed25519 keys that only their owner can touch, epochs, rotation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dolmen.errors import ExitCode
from dolmen.keys import KeyProblem, PublicKey, verify_signature
from dolmen.keys.file import FileKeyProvider
from dolmen.keys.trust import parse_trusted_keys


def test_generate_sign_verify(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "audit.key"
    key = FileKeyProvider.generate(path)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(path.parent).st_mode & 0o777 == 0o700
    assert key.epoch == 1 and key.public_key.algorithm == "ed25519"
    assert key.public_key.key_id.startswith("ed25519:") and len(key.public_key.key_id) == 24
    sig = key.sign(b"message")
    assert verify_signature(key.public_key, b"message", sig)
    assert not verify_signature(key.public_key, b"messagE", sig)
    assert not verify_signature(PublicKey("ed25519", bytes(32)), b"message", sig)
    again = FileKeyProvider(path)
    assert again.public_key == key.public_key and again.epoch == 1
    pub = parse_trusted_keys(path.with_name("audit.key.pub").read_text())
    assert pub[key.public_key.key_id].key == key.public_key


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o602])
def test_keys_readable_by_others_are_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "audit.key"
    FileKeyProvider.generate(path)
    os.chmod(path, mode)
    with pytest.raises(KeyProblem) as info:
        FileKeyProvider(path)
    assert f"{mode:04o}" in info.value.message and "chmod 600" in (info.value.hint or "")
    assert info.value.exit_code == ExitCode.ENVIRONMENT


def test_stricter_modes_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "audit.key"
    FileKeyProvider.generate(path)
    os.chmod(path, 0o400)
    assert FileKeyProvider(path).epoch == 1


def test_a_key_of_another_user_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to chown")
    path = tmp_path / "audit.key"
    FileKeyProvider.generate(path)
    os.chown(path, 12345, -1)
    with pytest.raises(KeyProblem, match="belongs to uid 12345"):
        FileKeyProvider(path)


def test_links_and_strangers_are_refused(tmp_path: Path) -> None:
    real = tmp_path / "real.key"
    FileKeyProvider.generate(real)
    link = tmp_path / "link.key"
    link.symlink_to(real)
    with pytest.raises(KeyProblem):
        FileKeyProvider(link)
    with pytest.raises(KeyProblem, match="no signing key"):
        FileKeyProvider(tmp_path / "absent.key")
    junk = tmp_path / "junk.key"
    junk.write_bytes(b"\x00\xffnot a key")
    junk.chmod(0o600)
    with pytest.raises(KeyProblem, match="not a dolmen key file"):
        FileKeyProvider(junk)
    pem = real.read_bytes()
    headless = tmp_path / "headless.key"
    headless.write_bytes(pem[pem.index(b"-----BEGIN") :])
    headless.chmod(0o600)
    with pytest.raises(KeyProblem, match="not a dolmen key file"):
        FileKeyProvider(headless)
    broken = tmp_path / "broken.key"
    broken.write_bytes(pem[:-40])
    broken.chmod(0o600)
    with pytest.raises(KeyProblem, match="not a readable private key"):
        FileKeyProvider(broken)


def test_generate_never_clobbers_and_rotation_moves_to_the_next_epoch(tmp_path: Path) -> None:
    path = tmp_path / "audit.key"
    first = FileKeyProvider.generate(path)
    with pytest.raises(KeyProblem, match="already exists"):
        FileKeyProvider.generate(path)
    second = first.rotate()
    assert second.epoch == 2 and second.public_key != first.public_key
    assert FileKeyProvider(path).public_key == second.public_key
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.key", "audit.key.pub"]


@pytest.mark.timeout(30)
def test_a_fifo_or_an_oversized_file_is_no_key(tmp_path: Path) -> None:
    """A FIFO named as a key, token or PIN is refused, not waited on for ever; a large file
    is not read whole."""
    from dolmen.keys.file import read_secret_line

    fifo = tmp_path / "fifo.key"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(KeyProblem, match="not a regular file"):
        FileKeyProvider(fifo)
    with pytest.raises(KeyProblem, match="not a regular file"):
        read_secret_line(fifo, "Vault token")
    big = tmp_path / "big.key"
    with open(big, "wb") as f:
        f.truncate(1 << 30)
    big.chmod(0o600)
    with pytest.raises(KeyProblem, match="larger than 65536 bytes"):
        FileKeyProvider(big)


@pytest.mark.parametrize(
    ("content", "words"), [(b"\xff\xfe", "not text"), (b" \n", "is empty"), (b"s.tok\n", "")]
)
def test_a_secret_line_is_text(tmp_path: Path, content: bytes, words: str) -> None:
    from dolmen.keys.file import read_secret_line

    path = tmp_path / "token"
    path.write_bytes(content)
    path.chmod(0o600)
    if not words:
        assert read_secret_line(path, "Vault token") == "s.tok"
        return
    with pytest.raises(KeyProblem, match=words) as info:
        read_secret_line(path, "Vault token")
    assert info.value.exit_code == ExitCode.ENVIRONMENT and info.value.hint
