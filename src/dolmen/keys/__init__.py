"""Key providers: who signs, with which public key, in which epoch (DESIGN.md "key providers"),
and who wraps the data keys of encrypted storage (docs/keys.md).

Two small interfaces. A ``Signer`` knows its public key and its epoch, and signs
bytes; it never hands out private material, and verification needs only the public
key. A ``KeyProvider`` (file, Vault/OpenBao transit, PKCS#11) holds a key-encryption
key (KEK) that never leaves it: callers get a random data key and its ``WrappedKey``
(envelope encryption), store the wrapped form, and ask the provider to unwrap it when
they need the data key again. Every unwrap is a *key release*: the provider calls the
``on_release`` callback it was opened with, and the caller (a higher layer: keys/
cannot import audit) writes the audit event.

An *epoch* numbers a signing key in the order keys were put in service (1, 2, ...).
A key rotation raises it; a verifier refuses a signature whose epoch is not the
one its trust store pins for that key, or that goes back after a later one was
seen (journald FSS, CVE-2023-31439: check key epochs across the whole log).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from dolmen.errors import EnvironmentProblem

ED25519 = "ed25519"
ALGORITHMS = (ED25519,)


class KeyProblem(EnvironmentProblem):
    """A signing key is missing, unreadable, malformed or not protected well enough."""


@dataclass(frozen=True)
class PublicKey:
    """A public key: its algorithm and raw bytes (32 for ed25519)."""

    algorithm: str
    raw: bytes

    @property
    def key_id(self) -> str:
        """A short, stable name: algorithm and the first 16 hex digits of SHA-256(raw)."""
        return f"{self.algorithm}:{hashlib.sha256(self.raw).hexdigest()[:16]}"


class Signer(Protocol):
    """What a key provider offers: its public key, its epoch, and signatures."""

    @property
    def public_key(self) -> PublicKey:
        """The public half of the signing key."""
        ...

    @property
    def epoch(self) -> int:
        """The epoch of the signing key (1 for the first key, +1 at each rotation)."""
        ...

    def sign(self, message: bytes) -> bytes:
        """A signature of ``message``; raises KeyProblem when the key cannot be used."""
        ...


def verify_signature(key: PublicKey, message: bytes, signature: bytes) -> bool:
    """Whether ``signature`` is ``key``'s signature of ``message``."""
    if key.algorithm != ED25519 or len(key.raw) != 32:
        return False
    # imported here: every process that writes an audit event imports this package (for
    # its settings), and most sign or verify nothing; `cryptography` takes a while to load
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(key.raw).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


WRAPPED_KEY_TYPE = "dolmen-wrapped-key/1"
PROVIDERS = ("file", "vault", "pkcs11")


@dataclass(frozen=True)
class WrappedKey:
    """A data key wrapped by a provider's KEK; callers store it (a LUKS2 token, a file).

    ``key_ref`` names the KEK (the KEK file's path, the transit key's name, the CKA_ID
    in hex), ``version`` the KEK version that wrapped it, ``context`` the derivation
    context it is bound to (a node or volume id; "" for none): unwrapping under
    another context fails."""

    provider: str
    key_ref: str
    version: int
    context: str
    blob: bytes

    def to_json(self) -> dict[str, object]:
        """The JSON form (the blob in base64), tagged with its type."""
        return {
            "type": WRAPPED_KEY_TYPE,
            "provider": self.provider,
            "key_ref": self.key_ref,
            "version": self.version,
            "context": self.context,
            "blob": base64.b64encode(self.blob).decode("ascii"),
        }

    @classmethod
    def from_json(cls, data: object) -> WrappedKey:
        """Parse ``to_json``'s form; KeyProblem naming what is wrong when malformed."""
        if not isinstance(data, dict):
            raise KeyProblem(f"a wrapped key is a JSON object, not {type(data).__name__}")
        if data.get("type") != WRAPPED_KEY_TYPE:
            raise KeyProblem(
                f"not a wrapped key: type {str(data.get('type'))[:40]!r}, "
                f"expected {WRAPPED_KEY_TYPE!r}"
            )
        provider, ref, version = data.get("provider"), data.get("key_ref"), data.get("version")
        context, blob = data.get("context"), data.get("blob")
        if provider not in PROVIDERS:
            raise KeyProblem(
                f"wrapped key: unknown provider {str(provider)[:40]!r}; "
                f"known: {', '.join(PROVIDERS)}"
            )
        if not isinstance(ref, str) or not ref:
            raise KeyProblem("wrapped key: key_ref must be a non-empty text")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise KeyProblem("wrapped key: version must be a positive integer")
        if not isinstance(context, str):
            raise KeyProblem("wrapped key: context must be a text")
        if not isinstance(blob, str):
            raise KeyProblem("wrapped key: blob must be base64 text")
        try:
            raw = base64.b64decode(blob, validate=True)
        except (binascii.Error, ValueError) as e:
            raise KeyProblem(f"wrapped key: blob is not base64: {e}") from e
        if not raw:
            raise KeyProblem("wrapped key: blob is empty")
        return cls(str(provider), ref, version, context, raw)


@dataclass(frozen=True)
class KeyRelease:
    """One unwrap, handed to ``on_release`` (the caller audits it): which KEK and version
    released a data key, under which context, for what (``purpose``: "crypt unlock ...")."""

    provider: str
    key_ref: str
    version: int
    context: str
    purpose: str


@dataclass(frozen=True)
class KeyVersions:
    """One key of a provider: what it is for, its newest version, the oldest version
    that may still unwrap (``min_decryption``), and the versions it holds."""

    key_ref: str
    purpose: str  # "wrap" | "sign"
    latest: int
    min_decryption: int
    versions: tuple[int, ...]


@dataclass(frozen=True)
class ProviderStatus:
    """What ``dolmen keys status`` shows of a provider. ``answers`` is None when it could
    not be asked (unknown, never a pass), ``detail`` one line: where, and what is wrong."""

    provider: str
    where: str  # the KEK file, the server address, the PKCS#11 module and token
    answers: bool | None
    latency_ms: float | None
    keys: tuple[KeyVersions, ...]
    detail: str = ""


class KeyProvider(Protocol):
    """Wrap and unwrap data keys with a KEK that never leaves the provider; sign; rotate."""

    name: str

    def new_data_key(self, *, context: str = "") -> tuple[bytes, WrappedKey]:
        """32 random bytes and their wrapped form (the caller stores the latter only)."""
        ...

    def wrap(self, data_key: bytes, *, context: str = "") -> WrappedKey:
        """``data_key`` wrapped by the newest KEK version, bound to ``context``."""
        ...

    def unwrap(self, wrapped: WrappedKey, *, purpose: str) -> bytes:
        """The data key: a key release, reported to ``on_release`` before it returns.
        KeyProblem when the blob was tampered with, the context or version is wrong,
        or the version is below the minimum decryption version."""
        ...

    def rewrap(self, wrapped: WrappedKey) -> WrappedKey:
        """The same data key wrapped by the newest KEK version (no release to the caller)."""
        ...

    def rotate(self) -> int:
        """Put a new KEK version in service; returns it. Old versions still unwrap."""
        ...

    def set_min_decryption_version(self, version: int) -> None:
        """Retire the KEK versions below ``version``: they never unwrap again."""
        ...

    def signer(self) -> Signer:
        """The provider's signing key (audit checkpoints, integrity manifests)."""
        ...

    def rotate_signer(self) -> Signer:
        """A new signing key in the next epoch; the old private key is destroyed (file:
        overwritten, vault: trimmed, pkcs11: its object deleted), so it never signs again."""
        ...

    def status(self) -> ProviderStatus:
        """Whether the provider answers, how fast, and which key versions it holds."""
        ...


def report_release(
    on_release: Callable[[KeyRelease], None] | None,
    provider: str,
    wrapped: WrappedKey,
    purpose: str,
) -> None:
    """Hand one key release to ``on_release`` (every provider's unwrap, before it returns)."""
    if on_release is not None:
        on_release(KeyRelease(provider, wrapped.key_ref, wrapped.version, wrapped.context, purpose))


class LocalUnwrap:
    """``unwrap`` and ``rewrap`` of a provider that opens a wrapped key itself (``_open``:
    the file ring, the HSM token), as opposed to a server that rewraps (vault): the key is
    reported to ``on_release`` before it is returned, and a rewrap releases nothing."""

    name: str
    _on_release: Callable[[KeyRelease], None] | None

    def _open(self, wrapped: WrappedKey) -> bytes:
        raise NotImplementedError

    def wrap(self, data_key: bytes, *, context: str = "") -> WrappedKey:
        raise NotImplementedError

    def unwrap(self, wrapped: WrappedKey, *, purpose: str) -> bytes:
        """The data key; reported to ``on_release`` before it is returned."""
        key = self._open(wrapped)
        report_release(self._on_release, self.name, wrapped, purpose)
        return key

    def rewrap(self, wrapped: WrappedKey) -> WrappedKey:
        """The same data key under the newest KEK version (it never leaves this process)."""
        return self.wrap(self._open(wrapped), context=wrapped.context)
