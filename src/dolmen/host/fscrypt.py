"""fscrypt v2 through its ioctls (linux/fscrypt.h): add a key, set a folder's policy, remove it.

v2 policies (Linux 5.4+) name their master key by an identifier the kernel computes
(HKDF-SHA512 of the key) and keep keys in the filesystem's keyring, not a process's:
every process sees a folder's files while the key is added, none after it is removed.
Removing the key evicts the folder's cached inodes and their per-file keys; a file still
open keeps the key "busy" until it is closed (``REMOVAL_STATUS_FLAG_FILES_BUSY``). This is
the crypto-shredding of a job's scratch: with the key gone, the files are ciphertext.

The filesystem must support encryption (ext4 with ``-O encrypt``, f2fs, ubifs; XFS and
btrfs not yet): ``EOPNOTSUPP`` otherwise, ``ENOTTY`` on a kernel without fscrypt.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# _IOWR('f', 23, struct fscrypt_add_key_arg) and the others, for the sizes below.
FS_IOC_ADD_ENCRYPTION_KEY = 0xC0506617
FS_IOC_REMOVE_ENCRYPTION_KEY = 0xC0406618
FS_IOC_GET_ENCRYPTION_KEY_STATUS = 0xC080661A
FS_IOC_SET_ENCRYPTION_POLICY = 0x800C6613
FS_IOC_GET_ENCRYPTION_POLICY_EX = 0xC0096616

KEY_SPEC_TYPE_IDENTIFIER = 2
POLICY_V2 = 2
MODE_AES_256_XTS = 1
MODE_AES_256_CTS = 4
FLAGS_PAD_32 = 0x03
KEY_SIZE = 64  # AES-256-XTS needs 64 bytes of key; the kernel's maximum (FSCRYPT_MAX_KEY_SIZE)
REMOVAL_FILES_BUSY = 0x1
REMOVAL_OTHER_USERS = 0x2
KEY_STATUS = {1: "absent", 2: "present", 3: "incompletely removed"}


@dataclass(frozen=True)
class Removal:
    """What removing a key did: ``busy`` when files were still open (their key lingers)."""

    busy: bool
    other_users: bool


def _spec(identifier: bytes) -> bytes:
    """struct fscrypt_key_specifier: type, reserved, a 32-byte union (identifier: 16)."""
    return struct.pack("=II32s", KEY_SPEC_TYPE_IDENTIFIER, 0, identifier)


@contextlib.contextmanager
def _fd(path: Path | str) -> Iterator[int]:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        yield fd
    finally:
        os.close(fd)


def add_key(mountpoint_or_dir: Path | str, raw: bytes) -> bytes:
    """Add a v2 master key to the filesystem holding ``mountpoint_or_dir``; returns its
    16-byte identifier. Adding a key already there only counts one more user of it."""
    if len(raw) != KEY_SIZE:
        raise ValueError(f"an fscrypt key here is {KEY_SIZE} bytes, not {len(raw)}")
    arg = bytearray(_spec(b"") + struct.pack("=II32x", len(raw), 0) + raw)
    with _fd(mountpoint_or_dir) as fd:
        fcntl.ioctl(fd, FS_IOC_ADD_ENCRYPTION_KEY, arg)
    return bytes(arg[8:24])


def set_policy(folder: Path | str, identifier: bytes) -> None:
    """Encrypt the empty ``folder`` (and all it will hold) under key ``identifier``."""
    policy = struct.pack(
        "=BBBB4x16s", POLICY_V2, MODE_AES_256_XTS, MODE_AES_256_CTS, FLAGS_PAD_32, identifier
    )
    with _fd(folder) as fd:
        fcntl.ioctl(fd, FS_IOC_SET_ENCRYPTION_POLICY, policy)


def policy_identifier(folder: Path | str) -> bytes | None:
    """The key identifier of ``folder``'s v2 policy; None when it is not encrypted."""
    arg = bytearray(struct.pack("=Q", 24) + b"\0" * 24)
    with _fd(folder) as fd:
        try:
            fcntl.ioctl(fd, FS_IOC_GET_ENCRYPTION_POLICY_EX, arg)
        except OSError as e:
            if e.errno in (errno.ENODATA, errno.ENOENT):
                return None
            raise
    if arg[8] != POLICY_V2:
        return None
    return bytes(arg[16:32])


def key_status(mountpoint_or_dir: Path | str, identifier: bytes) -> str:
    """``present``, ``absent`` or ``incompletely removed`` (files still open)."""
    arg = bytearray(_spec(identifier) + b"\0" * 88)
    with _fd(mountpoint_or_dir) as fd:
        fcntl.ioctl(fd, FS_IOC_GET_ENCRYPTION_KEY_STATUS, arg)
    status = struct.unpack_from("=I", arg, 64)[0]
    return KEY_STATUS.get(status, f"status {status}")


def remove_key(mountpoint_or_dir: Path | str, identifier: bytes) -> Removal:
    """Remove the key: the folder's files become unreadable once none is open."""
    arg = bytearray(_spec(identifier) + b"\0" * 24)
    with _fd(mountpoint_or_dir) as fd:
        fcntl.ioctl(fd, FS_IOC_REMOVE_ENCRYPTION_KEY, arg)
    flags = struct.unpack_from("=I", arg, 40)[0]
    return Removal(bool(flags & REMOVAL_FILES_BUSY), bool(flags & REMOVAL_OTHER_USERS))
