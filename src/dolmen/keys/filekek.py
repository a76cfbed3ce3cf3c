"""The file key provider: a ring of AES-256 key-encryption keys in one file only its owner reads.

    dolmen-kek/1
    min-decryption-version: 1
    1 <base64 of 32 bytes>
    2 <base64 of 32 bytes>

The newest version wraps; every version at or above ``min-decryption-version`` may
unwrap (Vault transit's model, so the three providers rotate alike). A data key is
wrapped with AES-256-GCM under a 96-bit random nonce; the additional data binds the
blob to its version and context, so a blob moved to another volume's context, or
relabelled to another version, does not unwrap. The file is refused when anyone but
its owner may read or write it (keys/file.py, like the signing key), and rewritten
atomically with mode 0600 at each rotation.

Threat note: this KEK is as safe as the root account and the disk of this host. It
lets a host without Vault or an HSM use the same envelope format; docs/keys.md.
"""

from __future__ import annotations

import base64
import binascii
import os
import time
from collections.abc import Callable
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from dolmen.fsutil import atomic_write
from dolmen.keys import (
    KeyProblem,
    KeyRelease,
    KeyVersions,
    LocalUnwrap,
    ProviderStatus,
    Signer,
    WrappedKey,
)
from dolmen.keys.file import FileKeyProvider, read_protected

HEADER = "dolmen-kek/1"
_NONCE = 12
DATA_KEY_BYTES = 32


def aad(provider: str, version: int, context: str) -> bytes:
    """The additional data a wrapped key is bound to."""
    return f"dolmen-wrapped-key/1\n{provider}\n{version}\n{context}\n".encode()


def parse_ring(text: str, path: str) -> tuple[dict[int, bytes], int]:
    """The versions of a KEK ring and its minimum decryption version (see module docstring);
    KeyProblem naming the line when it is malformed."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != HEADER:
        raise KeyProblem(f"{path} is not a dolmen KEK file (first line {HEADER!r})")
    ring: dict[int, bytes] = {}
    min_version = 1
    for number, raw in enumerate(lines[1:], 2):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("min-decryption-version:"):
            value = line.split(":", 1)[1].strip()
            if not value.isdigit() or int(value) < 1:
                raise KeyProblem(f"{path}:{number}: min-decryption-version must be 1 or more")
            min_version = int(value)
            continue
        fields = line.split()
        if len(fields) != 2 or not fields[0].isdigit() or int(fields[0]) < 1:
            raise KeyProblem(f"{path}:{number}: expected '<version> <base64 key>'")
        try:
            key = base64.b64decode(fields[1], validate=True)
        except (binascii.Error, ValueError) as e:
            raise KeyProblem(f"{path}:{number}: the key is not base64") from e
        if len(key) != 32:
            raise KeyProblem(f"{path}:{number}: an AES-256 KEK is 32 bytes, not {len(key)}")
        version = int(fields[0])
        if version in ring:
            raise KeyProblem(f"{path}:{number}: version {version} appears twice")
        ring[version] = key
    if not ring:
        raise KeyProblem(f"{path} holds no KEK version")
    return ring, min_version


def format_ring(ring: dict[int, bytes], min_version: int) -> bytes:
    """The text of a KEK ring, versions in order."""
    lines = [HEADER, f"min-decryption-version: {min_version}"]
    lines += [f"{v} {base64.b64encode(ring[v]).decode('ascii')}" for v in sorted(ring)]
    return ("\n".join(lines) + "\n").encode("ascii")


class FileProvider(LocalUnwrap):
    """The ``file`` KeyProvider: a KEK ring file (wrap/unwrap) and an ed25519 key file (sign)."""

    name = "file"

    def __init__(
        self,
        kek_path: Path,
        signing_key_path: Path,
        *,
        on_release: Callable[[KeyRelease], None] | None = None,
    ) -> None:
        self.kek_path = kek_path
        self.signing_key_path = signing_key_path
        self._on_release = on_release

    # -- the ring ---------------------------------------------------------------------
    def _load(self) -> tuple[dict[int, bytes], int]:
        data = read_protected(self.kek_path, "key-encryption key")
        try:
            text = data.decode("ascii")
        except UnicodeDecodeError as e:
            raise KeyProblem(f"{self.kek_path} is not a dolmen KEK file (not text)") from e
        return parse_ring(text, str(self.kek_path))

    def _load_or_create(self) -> tuple[dict[int, bytes], int]:
        if not os.path.lexists(self.kek_path):
            self._save({1: os.urandom(32)}, 1, create=True)
        return self._load()

    def _save(self, ring: dict[int, bytes], min_version: int, *, create: bool = False) -> None:
        folder = self.kek_path.parent
        if create and not folder.exists():
            folder.mkdir(parents=True, mode=0o700)
        try:
            atomic_write(self.kek_path, format_ring(ring, min_version), mode=0o600)
        except OSError as e:
            raise KeyProblem(
                f"cannot write the key-encryption key {self.kek_path}: {e.strerror or e}",
                hint=f"run as the owner of {folder}, or set [keys] kek_file",
            ) from e

    # -- KeyProvider ------------------------------------------------------------------
    def new_data_key(self, *, context: str = "") -> tuple[bytes, WrappedKey]:
        """32 random bytes and their wrapped form."""
        key = os.urandom(DATA_KEY_BYTES)
        return key, self.wrap(key, context=context)

    def wrap(self, data_key: bytes, *, context: str = "") -> WrappedKey:
        """AES-256-GCM under the newest KEK version, bound to ``context``."""
        if not data_key:
            raise KeyProblem("refusing to wrap an empty data key")
        ring, _min = self._load_or_create()
        version = max(ring)
        nonce = os.urandom(_NONCE)
        sealed = AESGCM(ring[version]).encrypt(nonce, data_key, aad(self.name, version, context))
        return WrappedKey(self.name, str(self.kek_path), version, context, nonce + sealed)

    def _open(self, wrapped: WrappedKey) -> bytes:
        if wrapped.provider != self.name:
            raise KeyProblem(
                f"this key was wrapped by the {wrapped.provider} provider, not by the file one",
                hint=f"set [keys] provider = {wrapped.provider!r} to unwrap it",
            )
        ring, min_version = self._load()
        if wrapped.version < min_version:
            raise KeyProblem(
                f"the key was wrapped by KEK version {wrapped.version}, below the minimum "
                f"decryption version {min_version} of {self.kek_path}",
                hint="it was retired on purpose; restore the data key from its recovery key",
            )
        kek = ring.get(wrapped.version)
        if kek is None:
            raise KeyProblem(
                f"{self.kek_path} holds no KEK version {wrapped.version} "
                f"(it holds {', '.join(map(str, sorted(ring)))})",
                hint="restore the KEK file that wrapped this key from its backup",
            )
        blob = wrapped.blob
        try:
            if len(blob) <= _NONCE + 16:
                raise InvalidTag
            return AESGCM(kek).decrypt(
                blob[:_NONCE], blob[_NONCE:], aad(self.name, wrapped.version, wrapped.context)
            )
        except InvalidTag:
            raise KeyProblem(
                f"the wrapped key does not open with KEK version {wrapped.version} under "
                f"context {wrapped.context!r}: tampered, or wrapped for another context or KEK",
                hint="check the context (node or volume id) and the KEK file's backup",
            ) from None

    def rotate(self) -> int:
        """Add a KEK version; older ones still unwrap until the minimum is raised. The
        first rotation of a host without a ring makes version 1."""
        if not os.path.lexists(self.kek_path):
            self._load_or_create()
            return 1
        ring, min_version = self._load()
        version = max(ring) + 1
        ring[version] = os.urandom(32)
        self._save(ring, min_version)
        return version

    def set_min_decryption_version(self, version: int) -> None:
        """Retire the versions below ``version`` (it must exist): they never unwrap again."""
        ring, _old = self._load()
        if version not in ring:
            raise KeyProblem(f"{self.kek_path} holds no KEK version {version}")
        self._save(ring, version)

    def signer(self) -> Signer:
        """The ed25519 key file (the audit log's by default)."""
        return FileKeyProvider(self.signing_key_path)

    def rotate_signer(self) -> Signer:
        """The ed25519 key file replaced by one in the next epoch (keys/file.py)."""
        return FileKeyProvider(self.signing_key_path).rotate()

    def status(self) -> ProviderStatus:
        """The ring's versions and the signing key's epoch; ``answers`` is whether both
        files can be read (a file not made yet is named in ``detail``, not a failure)."""
        start = time.perf_counter()
        keys: list[KeyVersions] = []
        problems: list[str] = []
        notes: list[str] = []
        try:
            if not os.path.lexists(self.kek_path):
                notes.append(f"no KEK yet at {self.kek_path} (made at the first wrap)")
            else:
                ring, min_version = self._load()
                versions = tuple(sorted(ring))
                keys.append(
                    KeyVersions(str(self.kek_path), "wrap", max(ring), min_version, versions)
                )
        except KeyProblem as e:
            problems.append(e.message)
        try:
            if not os.path.lexists(self.signing_key_path):
                notes.append(f"no signing key yet at {self.signing_key_path}")
            else:
                signer = FileKeyProvider(self.signing_key_path)
                epoch = signer.epoch
                keys.append(KeyVersions(signer.public_key.key_id, "sign", epoch, epoch, (epoch,)))
        except KeyProblem as e:
            problems.append(e.message)
        return ProviderStatus(
            self.name,
            str(self.kek_path),
            answers=not problems,
            latency_ms=(time.perf_counter() - start) * 1000,
            keys=tuple(keys),
            detail="; ".join(problems + notes),
        )
