"""The ``pkcs11`` key provider: an HSM or token through PKCS#11 (python-pkcs11).

The KEK is an AES-256 key made *in* the token, sensitive and not extractable: its
value never leaves the HSM. A data key is wrapped with CKM_AES_KEY_WRAP_PAD (RFC
5649) together with a 32-byte tag, SHA-256 of its version and context: KWP has no
additional data, so the tag inside the wrapped plaintext is what binds a blob to
its volume or node (checked after unwrap, before the key is released).

Keys are addressed by CKA_ID, never by label: labels are not unique (two objects
may share one, and the first match would be whichever the token lists first). The
CKA_ID of a key is the configured base plus its version in two bytes, so rotation
makes a new key with the next CKA_ID; a retired version has CKA_UNWRAP set to false
and the token itself refuses it. Signing uses an ed25519 key pair in the token
(CKM_EDDSA; SoftHSM2 2.6 has it); its public half is verified with verify_signature.

The PIN is read from a file only its owner may read; the session and its login
rules are in keys/hsm_token.py.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable
from typing import Any

from dolmen.keys import (
    KeyProblem,
    KeyRelease,
    KeyVersions,
    LocalUnwrap,
    ProviderStatus,
    Signer,
    WrappedKey,
)
from dolmen.keys.file import read_secret_line
from dolmen.keys.filekek import aad
from dolmen.keys.hsm_token import (
    Pkcs11Signer,
    Token,
    kwp_unwrap,
    kwp_wrap,
    new_signing_key,
    public_from_ec_point,
    signing_pairs,
    versioned_id,
)
from dolmen.keys.settings import KeySettings

__all__ = ["Pkcs11Provider", "public_from_ec_point"]


def _tag(version: int, context: str) -> bytes:
    return hashlib.sha256(aad("pkcs11", version, context)).digest()


class Pkcs11Provider(LocalUnwrap):
    """The ``pkcs11`` KeyProvider (see module docstring)."""

    name = "pkcs11"

    def __init__(
        self, settings: KeySettings, *, on_release: Callable[[KeyRelease], None] | None = None
    ) -> None:
        if settings.pkcs11_module is None or not settings.pkcs11_token:
            raise KeyProblem(
                "[keys] provider is pkcs11 but pkcs11_module or pkcs11_token is not set",
                hint='set [keys] pkcs11_module = "/usr/lib/softhsm/libsofthsm2.so" and '
                "pkcs11_token = <token label>",
            )
        if settings.pkcs11_pin_file is None:
            raise KeyProblem(
                "[keys] provider is pkcs11 but pkcs11_pin_file is not set",
                hint="write the user PIN to a file of mode 0600 and set [keys] pkcs11_pin_file",
            )
        self.settings = settings
        self._kek_base = bytes.fromhex(settings.pkcs11_key_id)
        self._sign_base = bytes.fromhex(settings.pkcs11_signing_key_id)
        pin = read_secret_line(settings.pkcs11_pin_file, "PKCS#11 PIN")
        self.token = Token(
            settings.pkcs11_module, settings.pkcs11_token, pin, settings.pkcs11_pin_file
        )
        self._on_release = on_release

    def _session(self) -> Any:
        return self.token.session()

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        return self.token.call(what, fn)

    def _keks(self) -> dict[int, Any]:
        from pkcs11 import ObjectClass

        return self.token.versions(self._kek_base, ObjectClass.SECRET_KEY)

    def _new_kek(self, version: int) -> Any:
        from pkcs11 import Attribute, KeyType

        oid = versioned_id(self._kek_base, version)
        template = {
            Attribute.TOKEN: True,
            Attribute.SENSITIVE: True,
            Attribute.EXTRACTABLE: False,
            Attribute.WRAP: True,
            Attribute.UNWRAP: True,
            Attribute.ENCRYPT: False,
            Attribute.DECRYPT: False,
        }
        return self._call(
            f"making KEK {oid.hex()}",
            lambda: self._session().generate_key(
                KeyType.AES, 256, id=oid, label="dolmen-kek", store=True, template=template
            ),
        )

    def _latest(self) -> tuple[int, Any]:
        keks = self._keks()
        if not keks:
            return 1, self._new_kek(1)
        version = max(keks)
        return version, keks[version]

    # -- KeyProvider ------------------------------------------------------------------
    def new_data_key(self, *, context: str = "") -> tuple[bytes, WrappedKey]:
        """32 random bytes from the token's generator, and their wrapped form."""
        key = bytes(self._call("random bytes", lambda: self._session().generate_random(256)))
        return key, self.wrap(key, context=context)

    def wrap(self, data_key: bytes, *, context: str = "") -> WrappedKey:
        """AES-KWP by the newest KEK of the token, the context tag inside."""
        if not data_key:
            raise KeyProblem("refusing to wrap an empty data key")
        version, kek = self._latest()
        value = data_key + _tag(version, context)

        blob = self._call("wrapping a data key", lambda: kwp_wrap(self._session(), kek, value))
        oid = versioned_id(self._kek_base, version)
        return WrappedKey(self.name, oid.hex(), version, context, blob)

    def _open(self, wrapped: WrappedKey) -> bytes:
        from pkcs11 import Attribute, ObjectClass

        if wrapped.provider != self.name:
            raise KeyProblem(
                f"this key was wrapped by the {wrapped.provider} provider, not by pkcs11",
                hint=f"set [keys] provider = {wrapped.provider!r} to unwrap it",
            )
        try:
            oid = bytes.fromhex(wrapped.key_ref)
        except ValueError:
            raise KeyProblem(
                f"wrapped key: key_ref {wrapped.key_ref[:40]!r} is not a CKA_ID"
            ) from None
        if len(oid) < 3 or int.from_bytes(oid[-2:], "big") != wrapped.version:
            raise KeyProblem(
                f"wrapped key: CKA_ID {wrapped.key_ref} is not version {wrapped.version}: tampered"
            )
        kek = self._call(
            f"finding KEK {oid.hex()}",
            lambda: self._session().get_key(id=oid, object_class=ObjectClass.SECRET_KEY),
        )
        if not kek[Attribute.UNWRAP]:
            raise KeyProblem(
                f"KEK version {wrapped.version} ({oid.hex()}) of {self.token.where} is retired "
                "(below the minimum decryption version)",
                hint="it was retired on purpose; restore the data key from its recovery key",
            )

        import pkcs11.exceptions as px

        try:
            value = kwp_unwrap(kek, wrapped.blob)
        except px.PKCS11Error:  # KWP's integrity check failed: tampered or another KEK
            value = b""
        key, tag = value[:-32], value[-32:]
        if not key or not hmac.compare_digest(tag, _tag(wrapped.version, wrapped.context)):
            raise KeyProblem(
                f"the wrapped key does not open with KEK {oid.hex()} under context "
                f"{wrapped.context!r}: tampered, or wrapped for another context or KEK",
                hint="check the context (node or volume id) and that this is the right token",
            )
        return key

    def rotate(self) -> int:
        """A new KEK in the token with the next CKA_ID; returns its version."""
        keks = self._keks()
        version = max(keks, default=0) + 1
        self._new_kek(version)
        return version

    def set_min_decryption_version(self, version: int) -> None:
        """Retire the KEK versions below ``version`` (CKA_UNWRAP false: the token refuses)."""
        from pkcs11 import Attribute

        keks = self._keks()
        if version not in keks:
            raise KeyProblem(f"{self.token.where} holds no KEK version {version}")
        for v, kek in keks.items():
            if v < version and kek[Attribute.UNWRAP]:
                self._call(f"retiring KEK version {v}", _retire(kek))

    def signer(self) -> Signer:
        """The newest ed25519 key pair of the token (made on first use)."""
        pairs = signing_pairs(self.token, self._sign_base)
        if not pairs:
            new_signing_key(self.token, self._sign_base, 1)
            pairs = signing_pairs(self.token, self._sign_base)
        version = max(pairs)
        return Pkcs11Signer(self.token, version, pairs[version])

    def rotate_signer(self) -> Signer:
        """A new ed25519 key pair with the next CKA_ID; the older private keys are deleted
        from the token (their public halves stay, for status and verification)."""
        from pkcs11 import ObjectClass

        pairs = signing_pairs(self.token, self._sign_base)
        version = max(pairs, default=0) + 1
        new_signing_key(self.token, self._sign_base, version)
        old = self.token.versions(self._sign_base, ObjectClass.PRIVATE_KEY)
        for v, private in old.items():
            if v < version:
                self._call(f"deleting the signing key version {v}", private.destroy)
        return self.signer()

    def status(self) -> ProviderStatus:
        """Whether the token answers, and its KEK and signing key versions."""
        from pkcs11 import Attribute

        start = time.perf_counter()
        keys: list[KeyVersions] = []
        try:
            keks = self._keks()
            if keks:
                live = [v for v, k in keks.items() if k[Attribute.UNWRAP]]
                keys.append(
                    KeyVersions(
                        self._kek_base.hex(),
                        "wrap",
                        max(keks),
                        min(live, default=max(keks) + 1),
                        tuple(sorted(keks)),
                    )
                )
            pairs = signing_pairs(self.token, self._sign_base)
            if pairs:
                keys.append(
                    KeyVersions(
                        self._sign_base.hex(), "sign", max(pairs), min(pairs), tuple(sorted(pairs))
                    )
                )
        except KeyProblem as e:
            where = self.token.where
            return ProviderStatus(self.name, where, False, _ms(start), tuple(keys), e.message)
        detail = "" if keys else "no keys yet (made at the first wrap or signature)"
        return ProviderStatus(self.name, self.token.where, True, _ms(start), tuple(keys), detail)


def _retire(kek: Any) -> Callable[[], None]:
    from pkcs11 import Attribute

    def run() -> None:
        kek[Attribute.UNWRAP] = False

    return run


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000
