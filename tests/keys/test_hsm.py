"""The pkcs11 provider against a private SoftHSM2 token (tests/keys/services.py)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from dolmen.keys import KeyProblem, KeyRelease, WrappedKey, verify_signature
from dolmen.keys.hsm import Pkcs11Provider, public_from_ec_point
from dolmen.keys.providers import open_provider
from dolmen.keys.settings import KeySettings
from tests.keys.services import SoftHsmToken


def _hsm(
    token: SoftHsmToken, releases: list[KeyRelease] | None = None, **kw: object
) -> Pkcs11Provider:
    p = open_provider(
        token.settings(**kw), on_release=None if releases is None else releases.append
    )
    assert isinstance(p, Pkcs11Provider)
    return p


def _pin_file(tmp_path: Path, pin: str) -> Path:
    path = tmp_path / "pin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, pin.encode())
    os.close(fd)
    return path


def test_wrong_pin(softhsm_token: SoftHsmToken, tmp_path: Path) -> None:
    # first in the module too: before any provider logged in, the token itself refuses it
    p = _hsm(softhsm_token, pkcs11_pin_file=_pin_file(tmp_path, "0000"))
    with pytest.raises(KeyProblem, match="refused the PIN in") as info:
        p.new_data_key()
    assert "user PIN" in (info.value.hint or "")
    _hsm(softhsm_token).new_data_key()  # the right PIN logs in
    with pytest.raises(KeyProblem, match="refused the PIN in"):  # and a wrong one still fails
        p.new_data_key()
    assert p.status().answers is False


def test_wrap_unwrap_rotate_rewrap_retire(softhsm_token: SoftHsmToken) -> None:
    releases: list[KeyRelease] = []
    p = _hsm(softhsm_token, releases)
    key, w1 = p.new_data_key(context="nvme0n1")
    assert len(key) == 32 and w1.version == 1
    assert w1.key_ref == p.settings.pkcs11_key_id + "0001" and key not in w1.blob
    assert p.unwrap(WrappedKey.from_json(w1.to_json()), purpose="crypt unlock") == key
    assert releases == [KeyRelease("pkcs11", w1.key_ref, 1, "nvme0n1", "crypt unlock")]
    assert p.rotate() == 2
    w2 = p.rewrap(w1)
    assert w2.version == 2 and w2.key_ref.endswith("0002") and p.unwrap(w2, purpose="t") == key
    assert p.unwrap(w1, purpose="t") == key
    p.set_min_decryption_version(2)
    with pytest.raises(KeyProblem, match="is retired"):
        p.unwrap(w1, purpose="t")
    status = p.status()
    assert status.answers and status.keys[0].purpose == "wrap"
    assert (status.keys[0].latest, status.keys[0].min_decryption, status.keys[0].versions) == (
        2,
        2,
        (1, 2),
    )


def test_kek_is_not_extractable(softhsm_token: SoftHsmToken) -> None:
    from pkcs11 import Attribute, ObjectClass

    p = _hsm(softhsm_token)
    p.new_data_key()
    kek = p._session().get_key(
        id=bytes.fromhex(p.settings.pkcs11_key_id + "0001"), object_class=ObjectClass.SECRET_KEY
    )
    assert kek[Attribute.EXTRACTABLE] is False and kek[Attribute.SENSITIVE] is True


@pytest.mark.parametrize("hostile", ["context", "tampered", "version", "key_ref", "other-kek"])
def test_hostile_blobs(softhsm_token: SoftHsmToken, hostile: str) -> None:
    p = _hsm(softhsm_token)
    _key, w = p.new_data_key(context="vol-a")
    other = _hsm(softhsm_token)
    _k2, w_other = other.new_data_key(context="vol-a")
    bad = {
        "context": replace(w, context="vol-b"),
        "tampered": replace(w, blob=w.blob[:-1] + bytes([w.blob[-1] ^ 1])),
        "version": replace(w, version=2),
        "key_ref": replace(w, key_ref="zz"),
        "other-kek": replace(w, key_ref=w_other.key_ref),
    }[hostile]
    with pytest.raises(KeyProblem):
        p.unwrap(bad, purpose="t")


def test_two_keys_with_one_label(softhsm_token: SoftHsmToken) -> None:
    """A stranger's AES key labelled like ours (and one with our CKA_ID prefix but another
    length) must not be taken for the KEK; two objects with our exact CKA_ID are refused."""
    from pkcs11 import KeyType

    p = _hsm(softhsm_token)
    key, w = p.new_data_key(context="n")
    session = p._session()
    session.generate_key(KeyType.AES, 256, id=b"stranger", label="dolmen-kek", store=True)
    session.generate_key(
        KeyType.AES,
        256,
        id=bytes.fromhex(p.settings.pkcs11_key_id) + b"\x00",
        label="dolmen-kek",
        store=True,
    )
    assert p.unwrap(w, purpose="t") == key and p.status().keys[0].versions == (1,)
    session.generate_key(
        KeyType.AES, 256, id=bytes.fromhex(w.key_ref), label="dolmen-kek", store=True
    )
    with pytest.raises(KeyProblem, match="CKA_ID"):
        p.unwrap(w, purpose="t")
    with pytest.raises(KeyProblem, match="two objects with CKA_ID"):
        p.wrap(b"k" * 32)


def test_signing_in_the_token(softhsm_token: SoftHsmToken) -> None:
    p = _hsm(softhsm_token)
    signer = p.signer()
    assert signer.epoch == 1 and signer.public_key.algorithm == "ed25519"
    sig = signer.sign(b"manifest")
    assert verify_signature(signer.public_key, b"manifest", sig)
    assert not verify_signature(signer.public_key, b"Manifest", sig)
    assert p.signer().public_key == signer.public_key
    assert p.status().keys[-1].purpose == "sign"


def test_bad_settings(softhsm_token: SoftHsmToken, tmp_path: Path) -> None:
    with pytest.raises(KeyProblem, match="pkcs11_module or pkcs11_token is not set"):
        open_provider(KeySettings(provider="pkcs11"))
    with pytest.raises(KeyProblem, match="no token labelled 'nope'"):
        _hsm(softhsm_token, pkcs11_token="nope").new_data_key()
    with pytest.raises(KeyProblem, match="no PKCS#11 module at"):
        _hsm(softhsm_token, pkcs11_module=tmp_path / "none.so").new_data_key()
    loose = tmp_path / "loose"
    loose.write_text(softhsm_token.pin)
    os.chmod(loose, 0o644)
    with pytest.raises(KeyProblem, match="has mode 0644"):
        _hsm(softhsm_token, pkcs11_pin_file=loose)


@pytest.mark.parametrize(
    ("point", "ok"),
    [
        (b"\x04\x20" + bytes(32), True),
        (bytes(32), True),
        (b"\x04\x41" + bytes(65), False),
        (b"", False),
    ],
)
def test_public_from_ec_point(point: bytes, ok: bool) -> None:
    if ok:
        assert public_from_ec_point(point) == bytes(32)
    else:
        with pytest.raises(KeyProblem):
            public_from_ec_point(point)


def test_rotate_signer_deletes_the_old_private_key(softhsm_token: SoftHsmToken) -> None:
    p = _hsm(softhsm_token)
    old = p.signer()
    new = p.rotate_signer()
    assert new.epoch == 2 and new.public_key != old.public_key
    assert verify_signature(new.public_key, b"m", new.sign(b"m"))
    with pytest.raises(KeyProblem, match="signing with"):
        old.sign(b"m")
