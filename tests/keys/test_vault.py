"""The vault provider against a real OpenBao dev server (tests/keys/services.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from dolmen.errors import ConfigError
from dolmen.keys import KeyProblem, KeyRelease, WrappedKey, verify_signature
from dolmen.keys.providers import open_provider
from dolmen.keys.settings import KeySettings
from dolmen.keys.vault import VaultProvider, ciphertext_version
from tests.keys.services import OpenBao, free_port


def _vault(
    openbao: OpenBao, releases: list[KeyRelease] | None = None, **kw: object
) -> VaultProvider:
    p = open_provider(
        openbao.settings(**kw), on_release=None if releases is None else releases.append
    )
    assert isinstance(p, VaultProvider)
    return p


def test_derived_wrap_unwrap_rotate_rewrap(openbao: OpenBao) -> None:
    releases: list[KeyRelease] = []
    p = _vault(openbao, releases)
    key, w1 = p.new_data_key(context="node-a")
    assert len(key) == 32 and w1.version == 1 and w1.key_ref == "dolmen"
    assert p.unwrap(WrappedKey.from_json(w1.to_json()), purpose="crypt unlock /dev/x") == key
    assert releases == [KeyRelease("vault", "dolmen", 1, "node-a", "crypt unlock /dev/x")]
    mine = os.urandom(32)
    w_empty = p.wrap(mine)  # "" context: transit needs one, the provider supplies its default
    assert p.unwrap(w_empty, purpose="t") == mine
    assert p.rotate() == 2
    w2 = p.rewrap(w1)
    assert w2.version == 2 and w2.context == "node-a" and p.unwrap(w2, purpose="t") == key
    assert len(releases) == 3  # rewrap released nothing
    p.set_min_decryption_version(2)
    with pytest.raises(KeyProblem, match="disallowed by policy") as info:
        p.unwrap(w1, purpose="t")
    assert openbao.address in info.value.message
    status = p.status()
    assert status.answers and status.latency_ms is not None
    wrap = status.keys[0]
    assert (wrap.purpose, wrap.latest, wrap.min_decryption, wrap.versions) == ("wrap", 2, 2, (2,))
    # the audit device declared in the config file saw the decrypts (hashed, not in clear)
    assert (
        "transit" in openbao.audit_log.read_text()
        and key.hex() not in openbao.audit_log.read_text()
    )


def test_wrong_context_and_tampered_blob(openbao: OpenBao) -> None:
    p = _vault(openbao)
    _key, w = p.new_data_key(context="vol-1")
    moved = WrappedKey("vault", w.key_ref, w.version, "vol-2", w.blob)
    with pytest.raises(KeyProblem, match="message authentication failed"):
        p.unwrap(moved, purpose="t")
    text = w.blob.decode()
    flipped = text[:-6] + ("A" if text[-6] != "A" else "B") + text[-5:]
    with pytest.raises(KeyProblem, match="refused"):
        p.unwrap(WrappedKey("vault", w.key_ref, w.version, "vol-1", flipped.encode()), purpose="t")
    with pytest.raises(KeyProblem, match="tampered"):
        p.unwrap(WrappedKey("vault", w.key_ref, 7, "vol-1", w.blob), purpose="t")
    with pytest.raises(KeyProblem, match="not a transit ciphertext"):
        p.unwrap(WrappedKey("vault", w.key_ref, 1, "vol-1", b"junk"), purpose="t")


def test_signing_key_verifies_locally(openbao: OpenBao) -> None:
    p = _vault(openbao)
    signer = p.signer()
    assert signer.epoch == 1 and signer.public_key.algorithm == "ed25519"
    sig = signer.sign(b"checkpoint")
    assert verify_signature(signer.public_key, b"checkpoint", sig)
    assert not verify_signature(signer.public_key, b"checkpoinT", sig)


def test_wrong_token(openbao: OpenBao, tmp_path: Path) -> None:
    bad = tmp_path / "token"
    fd = os.open(bad, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"s.not-a-token\n")
    os.close(fd)
    p = _vault(openbao, vault_token_file=bad)
    with pytest.raises(KeyProblem, match="refused the token") as info:
        p.new_data_key()
    assert openbao.address in info.value.message and str(bad) in (info.value.hint or "")
    assert p.status().answers is False


def test_token_file_readable_by_others_is_refused(openbao: OpenBao, tmp_path: Path) -> None:
    loose = tmp_path / "token"
    loose.write_text(openbao.root_token)
    os.chmod(loose, 0o644)
    with pytest.raises(KeyProblem, match=r"Vault token .* has mode 0644"):
        _vault(openbao, vault_token_file=loose)


def test_dead_server(openbao: OpenBao) -> None:
    address = f"http://127.0.0.1:{free_port()}"
    p = _vault(openbao, vault_address=address, vault_mount="transit", timeout=2.0)
    with pytest.raises(KeyProblem, match=f"the Vault server {address} does not answer") as info:
        p.wrap(b"k" * 32)
    assert "vault_address" in (info.value.hint or "")
    status = p.status()
    assert status.answers is False and address in status.detail


def test_sealed_server(openbao: OpenBao) -> None:
    p = _vault(openbao)
    _key, w = p.new_data_key(context="n")
    openbao.seal()
    try:
        with pytest.raises(KeyProblem, match="is sealed") as info:
            p.unwrap(w, purpose="t")
        assert "unseal" in (info.value.hint or "")
        assert p.status().answers is False
    finally:
        openbao.unseal()


def test_a_key_that_is_not_derived_is_refused(openbao: OpenBao) -> None:
    s = openbao.settings(vault_key="flat")
    openbao.client().secrets.transit.create_key("flat", mount_point=s.vault_mount)
    with pytest.raises(KeyProblem, match="is not derived"):
        open_provider(s).wrap(b"k" * 32, context="n")


def test_settings_refused_before_any_call(tmp_path: Path) -> None:
    with pytest.raises(KeyProblem, match="vault_address is not set"):
        open_provider(KeySettings(provider="vault"))
    with pytest.raises(KeyProblem, match="plain-http"):
        open_provider(KeySettings(provider="vault", vault_address="http://10.0.0.5:8200"))
    with pytest.raises(KeyProblem, match="vault_token_file is not set"):
        open_provider(KeySettings(provider="vault", vault_address="https://vault:8200"))
    for junk in ("https://[::1", "https://vault:99999", "vault.example:8200"):
        with pytest.raises(ConfigError, match="is not an http"):  # was urllib's ValueError
            open_provider(KeySettings(provider="vault", vault_address=junk))


@pytest.mark.parametrize("text", ["vault:v2:abc", "vault:v10:x"])
def test_ciphertext_version(text: str) -> None:
    assert ciphertext_version(text) in (2, 10)


@pytest.mark.parametrize("text", ["", "vault:2:abc", "vault:vx:abc", "other:v1:abc", "vault:v1"])
def test_ciphertext_version_junk(text: str) -> None:
    with pytest.raises(KeyProblem):
        ciphertext_version(text)


def test_rotate_signer_trims_the_old_key(openbao: OpenBao) -> None:
    p = _vault(openbao)
    old = p.signer()
    new = p.rotate_signer()
    assert new.epoch == 2 and new.public_key != old.public_key
    assert verify_signature(new.public_key, b"m", new.sign(b"m"))
    with pytest.raises(KeyProblem, match="signing"):
        old.sign(b"m")  # version 1 was trimmed: the server cannot sign with it any more
    status = p.status()
    assert status.answers and "no wrap key" in status.detail  # none made in this mount yet
    (sign,) = status.keys
    assert (sign.purpose, sign.latest, sign.versions) == ("sign", 2, (2,))


@pytest.fixture(scope="module")
def openbao_tls(tmp_path_factory: pytest.TempPathFactory, openbao: OpenBao) -> Iterator[OpenBao]:
    """A second dev server, on https with a CA of its own (openbao first: it skips alike)."""
    from tests.keys.services import start_openbao

    with start_openbao(tmp_path_factory.mktemp("openbao-tls"), tls=True) as server:
        yield server


def test_tls_with_the_server_ca_and_without(openbao_tls: OpenBao) -> None:
    s = openbao_tls.settings()
    assert s.vault_address.startswith("https://") and s.vault_ca_cert is not None
    p = open_provider(s)
    key, w = p.new_data_key(context="n")
    assert p.unwrap(w, purpose="t") == key
    untrusted = open_provider(replace(s, vault_ca_cert=None))
    with pytest.raises(
        KeyProblem, match=f"TLS to the Vault server {s.vault_address} failed"
    ) as info:
        untrusted.unwrap(w, purpose="t")
    assert "vault_ca_cert" in (info.value.hint or "")
