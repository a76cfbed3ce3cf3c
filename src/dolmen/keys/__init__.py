"""Key providers: who signs, with which public key, in which epoch (DESIGN.md "key providers").

The interface is deliberately small so Vault/OpenBao transit and PKCS#11 providers
fit it later: a provider knows its public key and its epoch, and signs bytes. It
never hands out private material. Verification needs only the public key.

An *epoch* numbers a signing key in the order keys were put in service (1, 2, ...).
A key rotation raises it; a verifier refuses a signature whose epoch is not the
one its trust store pins for that key, or that goes back after a later one was
seen (journald FSS, CVE-2023-31439: check key epochs across the whole log).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

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
    try:
        Ed25519PublicKey.from_public_bytes(key.raw).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True
