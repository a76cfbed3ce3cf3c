"""The file key provider: an ed25519 private key in a PEM file that only its owner can read.

The file is PKCS#8 PEM, preceded by one header line that pins its epoch:

    dolmen-key-epoch: 2
    -----BEGIN PRIVATE KEY-----
    ...

Like OpenSSH's StrictModes, the key is refused when anyone but its owner may read
or write it (mode wider than 0600), when it is not a regular file, or when it
belongs to another user than the one signing. Beside it, ``<key>.pub`` holds the
trust line for the public half (keys/trust.py), for an operator to pin elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dolmen.keys import ED25519, KeyProblem, PublicKey
from dolmen.keys.trust import trust_line

_EPOCH = re.compile(rb"^dolmen-key-epoch:\s*(\d+)\s*$", re.M)


class FileKeyProvider:
    """An ed25519 signing key read from a protected file (see module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        data = read_protected(path)
        begin = data.find(b"-----BEGIN")
        m = _EPOCH.search(data[: max(begin, 0)])
        if begin < 0 or m is None:
            raise KeyProblem(
                f"{path} is not a dolmen key file (PEM with a dolmen-key-epoch line)",
                hint="move it aside; dolmen creates a new key on the next checkpoint",
            )
        try:
            key = serialization.load_pem_private_key(data[begin:], password=None)
        except (ValueError, TypeError) as e:
            raise KeyProblem(f"{path}: not a readable private key: {e}") from e
        if not isinstance(key, Ed25519PrivateKey):
            raise KeyProblem(f"{path}: not an ed25519 key", hint="dolmen signs with ed25519")
        self._key = key
        self._epoch = int(m.group(1))
        raw = key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        self._public = PublicKey(ED25519, raw)

    @property
    def public_key(self) -> PublicKey:
        """The public half of the key."""
        return self._public

    @property
    def epoch(self) -> int:
        """The epoch written in the key file."""
        return self._epoch

    def sign(self, message: bytes) -> bytes:
        """An ed25519 signature of ``message``."""
        return self._key.sign(message)

    @classmethod
    def generate(cls, path: Path, epoch: int = 1, *, replace: bool = False) -> FileKeyProvider:
        """Make a new key file (0600, folder 0700) with ``epoch``; refuse to overwrite one
        unless ``replace``, in which case the old private key is destroyed."""
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        payload = f"dolmen-key-epoch: {epoch}\n".encode() + pem
        tmp = path.with_name(f".{path.name}.new-{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
            if replace:
                shred(path)
                os.replace(tmp, path)
            else:
                os.link(tmp, path)  # fails if a key appeared meanwhile: never clobber one
                os.unlink(tmp)
        except FileExistsError as e:
            raise KeyProblem(f"a key already exists at {path}") from e
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        provider = cls(path)
        pub = path.with_name(path.name + ".pub")
        pub.write_text(trust_line(provider.public_key, epoch) + "\n", encoding="ascii")
        dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        return provider

    def rotate(self) -> FileKeyProvider:
        """Replace this key by a new one in the next epoch; the old private key is destroyed
        so it can never sign again (forward security)."""
        return FileKeyProvider.generate(self.path, self._epoch + 1, replace=True)


MAX_KEY_FILE = 64 << 10  # keys, tokens and PINs are bytes to a few KiB; a log is not a key


def read_protected(path: Path, what: str = "signing key") -> bytes:
    """The bytes of a key file that only its owner may read or write (see module docstring);
    KeyProblem naming ``what`` and the fix otherwise. Opened non-blocking: a FIFO named as
    a key (or a token file) is refused as not a regular file, not waited on for ever."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError as e:
        raise KeyProblem(f"no {what} at {path}") from e
    except OSError as e:
        raise KeyProblem(f"cannot open the {what} {path}: {e.strerror}") from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise KeyProblem(f"the {what} {path} is not a regular file")
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o077:
            raise KeyProblem(
                f"the {what} {path} has mode {mode:04o}: others may read or change it",
                hint=f"chmod 600 {path} (dolmen refuses keys readable by anyone but their owner)",
            )
        if st.st_uid != os.geteuid():
            raise KeyProblem(
                f"the {what} {path} belongs to uid {st.st_uid}, not to uid {os.geteuid()}",
                hint=f"chown {os.geteuid()} {path}",
            )
        with os.fdopen(fd, "rb") as f:
            fd = -1
            data = f.read(MAX_KEY_FILE + 1)
        if len(data) > MAX_KEY_FILE:
            raise KeyProblem(
                f"the {what} {path} is larger than {MAX_KEY_FILE} bytes: not a key file",
                hint="name the key (or token, PIN) file itself",
            )
        return data
    finally:
        if fd >= 0:
            os.close(fd)


def read_secret_line(path: Path, what: str) -> str:
    """The one line of a protected secret file (a Vault token, a PKCS#11 PIN), stripped;
    KeyProblem when it is not text or holds nothing."""
    try:
        text = read_protected(path, what).decode("utf-8").strip()
    except UnicodeDecodeError:
        raise KeyProblem(
            f"the {what} file {path} is not text (not UTF-8)",
            hint=f"write the {what} alone, as text, into {path}",
        ) from None
    if not text:
        raise KeyProblem(f"the {what} file {path} is empty", hint=f"write the {what} into {path}")
    return text


def shred(path: Path) -> None:
    """Overwrite a private key before it is replaced (best effort: a journaling or
    copy-on-write file system may keep old blocks; the file is also replaced)."""
    try:
        size = path.stat().st_size
        with open(path, "r+b", buffering=0) as f:
            f.write(b"\0" * size)
            os.fsync(f.fileno())
    except OSError:
        pass
