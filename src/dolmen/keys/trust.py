"""Trusted public keys: the anchors a verifier checks signatures against.

One key a line, ``#`` starts a comment:

    # algorithm  epoch  public key (base64 of the raw bytes)
    ed25519 1 uM6Hy3h0sC6mN2tqQ9l8yXbJ1ZtV1K7nq3Wm0dJ1sKs=  # node1, 2026-03-01

A checkpoint is only worth its signature if the key that made it is one you
trust for a reason other than "the log says so" (sigstore Rekor's lesson): keep
this file under configuration management, or pass a copy kept off the host to
``dolmen audit verify --trusted-keys``.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dolmen.errors import EnvironmentProblem, InputError
from dolmen.fsutil import read_regular
from dolmen.keys import ALGORITHMS, PublicKey


@dataclass(frozen=True)
class TrustedKey:
    """A public key and the epoch it is trusted for."""

    key: PublicKey
    epoch: int


TrustStore = Mapping[str, TrustedKey]  # key id -> trusted key


def trust_line(key: PublicKey, epoch: int) -> str:
    """The line that trusts ``key`` for ``epoch``."""
    b64 = base64.b64encode(key.raw).decode("ascii")
    return f"{key.algorithm} {epoch} {b64}  # {key.key_id}"


def parse_trusted_keys(text: str, path: str = "<trusted keys>") -> dict[str, TrustedKey]:
    """Parse a trust file; a malformed line is an InputError naming the line."""
    store: dict[str, TrustedKey] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) != 3:
            raise InputError(
                "expected '<algorithm> <epoch> <base64 public key>'", path=path, line=number
            )
        algorithm, epoch_text, b64 = fields
        if algorithm not in ALGORITHMS:
            raise InputError(
                f"unknown algorithm {algorithm!r}; known: {', '.join(ALGORITHMS)}",
                path=path,
                line=number,
            )
        if not epoch_text.isdigit() or int(epoch_text) < 1:
            raise InputError("the epoch must be a positive integer", path=path, line=number)
        try:
            raw_key = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError) as e:
            raise InputError(f"the public key is not base64: {e}", path=path, line=number) from e
        if len(raw_key) != 32:
            raise InputError("an ed25519 public key is 32 bytes", path=path, line=number)
        key = PublicKey(algorithm, raw_key)
        store[key.key_id] = TrustedKey(key, int(epoch_text))
    return store


MAX_TRUST_FILE = 1 << 20  # a trust line is about 80 bytes: thousands of keys fit


def load_trusted_keys(path: Path) -> dict[str, TrustedKey] | None:
    """The trust store at ``path``; None when the file does not exist."""
    try:
        text = read_regular(path, MAX_TRUST_FILE).decode("utf-8")
    except FileNotFoundError:
        return None
    except PermissionError:
        raise EnvironmentProblem(
            f"cannot read the trusted keys {path}: permission denied",
            hint="run as a user who may read it, or pass --trusted-keys FILE",
        ) from None
    except OSError as e:
        raise InputError(
            f"cannot read the trusted keys: {e.strerror}",
            path=str(path),
            hint="name a file of trust lines (dolmen audit key prints one)",
        ) from None
    except UnicodeDecodeError:
        raise InputError(
            "cannot read the trusted keys: not UTF-8 text",
            path=str(path),
            hint="name a file of trust lines (dolmen audit key prints one)",
        ) from None
    return parse_trusted_keys(text, str(path))


def add_trusted_key(path: Path, key: PublicKey, epoch: int) -> None:
    """Append ``key`` to the trust file (created 0644 when absent), durably."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (trust_line(key, epoch) + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
