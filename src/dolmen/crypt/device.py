"""The device a crypt command is given: a LUKS2 block device (or image), writable, read.

Bad input is refused before anything runs, each with one line and its fix: a path that
does not exist, a FIFO or character device, a folder, a device this user may not write,
a device without a LUKS header, a LUKS1 header (no tokens).
"""

from __future__ import annotations

import os

from dolmen.errors import InputError, NeedsRoot
from dolmen.facts.crypt.luks2 import BINARY_SIZE, NOT_LUKS, LuksHeader, parse_header, read_size
from dolmen.host import Host
from dolmen.host.blockdev import kind, read_head

_HINT = "name a LUKS2 block device (/dev/nvme1n1p1) or image file; `lsblk -f` lists them"


def absolute(device: str) -> str:
    """The device path made absolute (an image named relative to the working folder)."""
    return os.path.abspath(device)


def read_luks2(host: Host, device: str) -> LuksHeader:
    """The LUKS2 header of ``device`` (absolute path on ``host``); raises the refusals."""
    rel = device.lstrip("/")
    try:
        what = kind(host, rel)
    except PermissionError:
        raise NeedsRoot(
            f"{device}: this user may not reach it", hint="run as root (sudo dolmen crypt ...)"
        ) from None
    if what is None:
        raise InputError("no such device or file", path=device, hint=_HINT)
    if what not in ("a block device", "a regular file"):
        raise InputError(f"{what}, not a block device or LUKS image", path=device, hint=_HINT)
    if not host.writable(rel):
        raise NeedsRoot(
            f"{device}: this user may not write it (LUKS changes rewrite its header)",
            hint="run as root (sudo dolmen crypt ...)",
        )
    try:
        head = read_head(host, rel, BINARY_SIZE)
        parsed = parse_header(read_head(host, rel, read_size(head)))
    except PermissionError:
        raise NeedsRoot(f"{device}: this user may not read it", hint="run as root") from None
    except OSError as e:
        raise InputError(f"cannot read it ({e.strerror or e})", path=device) from None
    if parsed.header is None:
        if parsed.reason == NOT_LUKS:
            raise InputError(
                "not a LUKS device (no LUKS header)",
                path=device,
                hint="format it first: cryptsetup luksFormat --type luks2 DEVICE",
            )
        raise InputError(f"unreadable LUKS header: {parsed.reason}", path=device)
    if parsed.header.version != 2:
        raise InputError(
            f"LUKS{parsed.header.version}, which has no tokens",
            path=device,
            hint="convert it: cryptsetup luksHeaderBackup, then cryptsetup convert --type luks2",
        )
    return parsed.header
