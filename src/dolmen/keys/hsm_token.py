"""One PKCS#11 token for the pkcs11 provider: its logged-in session, errors, CKA_ID versions,
and the ed25519 signer (keys/hsm.py holds the provider itself).

PKCS#11 logs in per process, not per session: a second login to the same token raises
CKR_USER_ALREADY_LOGGED_IN, and a session opened after a login is already logged in
whatever PIN its caller holds. So the session is shared per (module, token) and a
caller whose PIN differs from the one that logged in is refused, never let through.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import hmac
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dolmen.keys import ED25519, KeyProblem, PublicKey

ED25519_OID = "1.3.101.112"
_SESSIONS: dict[tuple[str, str], tuple[Any, bytes]] = {}  # (module, token) -> session, PIN hash


@atexit.register
def _close_all() -> None:
    for session, _pin in _SESSIONS.values():
        with contextlib.suppress(Exception):  # the process is ending
            session.close()
    _SESSIONS.clear()


class Token:
    """A token of a PKCS#11 module, opened with the PIN of ``pin_file`` when first used."""

    def __init__(self, module: Path, label: str, pin: str, pin_file: Path) -> None:
        self.module, self.label, self._pin, self.pin_file = str(module), label, pin, pin_file
        self.where = f"{module} token {label!r}"

    def session(self) -> Any:
        """The logged-in read-write session (opened at the first call)."""
        import pkcs11
        import pkcs11.exceptions as px

        pin_hash = hashlib.sha256(self._pin.encode()).digest()
        cached = _SESSIONS.get((self.module, self.label))
        if cached is not None:
            if not hmac.compare_digest(cached[1], pin_hash):
                raise self.wrong_pin()
            return cached[0]
        if not os.path.exists(self.module):
            raise KeyProblem(
                f"no PKCS#11 module at {self.module}",
                hint="install the HSM's PKCS#11 library or fix [keys] pkcs11_module",
            )
        try:
            token = pkcs11.lib(self.module).get_token(token_label=self.label)
            session = token.open(rw=True, user_pin=self._pin)
        except px.NoSuchToken as e:
            raise KeyProblem(
                f"no token labelled {self.label!r} in {self.module}",
                hint="list the tokens (softhsm2-util --show-slots, pkcs11-tool -L) and fix "
                "[keys] pkcs11_token",
            ) from e
        except (px.PinIncorrect, px.PinInvalid, px.PinLenRange) as e:
            raise self.wrong_pin() from e
        except px.PinLocked as e:
            raise KeyProblem(f"the PIN of {self.where} is locked", hint="unlock it (SO PIN)") from e
        except (px.PKCS11Error, RuntimeError, OSError) as e:
            raise KeyProblem(f"{self.where} does not answer: {type(e).__name__} {e}") from e
        _SESSIONS[(self.module, self.label)] = (session, pin_hash)
        return session

    def wrong_pin(self) -> KeyProblem:
        """The one line for a PIN the token (or its logged-in session) refuses."""
        return KeyProblem(
            f"{self.where} refused the PIN in {self.pin_file}",
            hint=f"write the token's user PIN to {self.pin_file}",
        )

    def call(self, what: str, fn: Callable[[], Any]) -> Any:
        """``fn()``, its PKCS#11 errors as one KeyProblem naming the token and ``what``."""
        import pkcs11.exceptions as px

        try:
            return fn()
        except px.MultipleObjectsReturned as e:
            raise KeyProblem(
                f"{self.where}: two objects share one CKA_ID ({what})",
                hint="delete the duplicate (pkcs11-tool --delete-object --id ...)",
            ) from e
        except px.PKCS11Error as e:
            raise KeyProblem(f"{self.where} refused {what}: {type(e).__name__} {e}".strip()) from e

    def versions(self, base: bytes, object_class: Any) -> dict[int, Any]:
        """Every object of ``object_class`` whose CKA_ID is ``base`` + 2 version bytes (an
        object with another CKA_ID, whatever its label, is not ours)."""
        from pkcs11 import Attribute

        def run() -> dict[int, Any]:
            found: dict[int, Any] = {}
            for obj in self.session().get_objects({Attribute.CLASS: object_class}):
                oid = bytes(obj[Attribute.ID])
                if len(oid) == len(base) + 2 and oid.startswith(base):
                    version = int.from_bytes(oid[-2:], "big")
                    if version in found:
                        raise KeyProblem(f"{self.where}: two objects with CKA_ID {oid.hex()}")
                    found[version] = obj
            return found

        found: dict[int, Any] = self.call(f"listing the keys {base.hex()}*", run)
        return found


def versioned_id(base: bytes, version: int) -> bytes:
    """The CKA_ID of version ``version`` of the key ``base``."""
    return base + version.to_bytes(2, "big")


def public_from_ec_point(point: bytes) -> bytes:
    """The raw 32-byte ed25519 key from CKA_EC_POINT (a DER OCTET STRING, or raw)."""
    if len(point) == 34 and point[:2] == b"\x04\x20":
        return point[2:]
    if len(point) == 32:
        return point
    raise KeyProblem(f"not an ed25519 CKA_EC_POINT ({len(point)} bytes)")


def signing_pairs(token: Token, base: bytes) -> dict[int, Any]:
    """The public halves of the signing key's versions."""
    from pkcs11 import ObjectClass

    return token.versions(base, ObjectClass.PUBLIC_KEY)


def new_signing_key(token: Token, base: bytes, version: int) -> None:
    """An ed25519 key pair in the token (CKM_EC_EDWARDS_KEY_PAIR_GEN), private half
    sensitive and not extractable."""
    from pkcs11 import Attribute, KeyType, Mechanism
    from pkcs11.util.ec import encode_named_curve_parameters

    oid = versioned_id(base, version)
    token.call(
        f"making the ed25519 key {oid.hex()}",
        lambda: token.session().generate_keypair(
            KeyType.EC_EDWARDS,
            mechanism=Mechanism.EC_EDWARDS_KEY_PAIR_GEN,
            store=True,
            id=oid,
            label="dolmen-signing",
            public_template={Attribute.EC_PARAMS: encode_named_curve_parameters(ED25519_OID)},
            private_template={Attribute.SENSITIVE: True, Attribute.EXTRACTABLE: False},
        ),
    )


class Pkcs11Signer:
    """A Signer backed by one ed25519 key pair of the token (its CKA_ID version: the epoch)."""

    def __init__(self, token: Token, version: int, public: Any) -> None:
        from pkcs11 import Attribute

        self._token, self._version = token, version
        self._id = bytes(public[Attribute.ID])
        self._key = PublicKey(ED25519, public_from_ec_point(bytes(public[Attribute.EC_POINT])))

    @property
    def public_key(self) -> PublicKey:
        """The public half, read from the token."""
        return self._key

    @property
    def epoch(self) -> int:
        """The CKA_ID version of the key pair."""
        return self._version

    def sign(self, message: bytes) -> bytes:
        """CKM_EDDSA by the private key with the same CKA_ID."""
        from pkcs11 import Mechanism, ObjectClass

        def run() -> bytes:
            key = self._token.session().get_key(id=self._id, object_class=ObjectClass.PRIVATE_KEY)
            return bytes(key.sign(message, mechanism=Mechanism.EDDSA))

        signature: bytes = self._token.call(f"signing with {self._id.hex()}", run)
        return signature
