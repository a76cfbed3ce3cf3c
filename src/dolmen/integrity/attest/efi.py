"""What an event measured, in words: the EFI variable, the loaded image's path, the action.

Decoded enough to name things for a person reading a failed attestation ("PCR 7 changed:
EV_EFI_VARIABLE_DRIVER_CONFIG db"), never trusted: the digest, not this text, is what the
replay checks. Layouts: UEFI_VARIABLE_DATA and UEFI_IMAGE_LOAD_EVENT (PFP 10.4.2/10.4.3),
the UEFI device path's media file path node (UEFI 2.10, 10.3.5.4). Pure; undecodable data
is described as such, never raised.
"""

from __future__ import annotations

import struct
import uuid

from dolmen.integrity.attest.eventlog import STARTUP_LOCALITY_SIGNATURE, Event

_VARIABLE_TYPES = {0x80000001, 0x80000002, 0x8000000C, 0x800000E0}
_IMAGE_TYPES = {0x80000003, 0x80000004, 0x80000005}
_TEXT_TYPES = {0x5, 0x80000007, 0x8, 0xD}  # EV_ACTION, EV_EFI_ACTION, CRTM version, EV_IPL
EFI_GLOBAL_VARIABLE = uuid.UUID("8be4df61-93ca-11d2-aa0d-00e098032b8c")
EFI_IMAGE_SECURITY_DATABASE = uuid.UUID("d719b2cb-3d3a-4596-a3bc-dad00e67656f")
_MAX_SHOWN = 200


def describe(event: Event) -> str:
    """One line naming what the event measured, from its type and data."""
    data, etype = event.data, event.event_type
    if etype in _VARIABLE_TYPES:
        return variable_name(data) or "an EFI variable (undecodable UEFI_VARIABLE_DATA)"
    if etype in _IMAGE_TYPES:
        path = image_path(data)
        return path if path is not None else "an EFI image (no file path in its device path)"
    if etype == 0x4:
        return "separator " + (data.hex() if len(data) <= 8 else f"({len(data)} bytes)")
    if etype == 0x3 and data.startswith(STARTUP_LOCALITY_SIGNATURE) and len(data) == 17:
        return f"StartupLocality {data[16]}"
    if etype == 0x3 and data.startswith(b"Spec ID Event03"):
        return "Spec ID Event03"
    if etype in _TEXT_TYPES:
        return _text(data)
    return f"{len(data)} bytes"


def variable_name(data: bytes) -> str | None:
    """``db``, ``SecureBoot``, ``Boot0001`` (with its vendor GUID when it is neither the
    global nor the image security database one), or None when the data is not a
    UEFI_VARIABLE_DATA."""
    if len(data) < 32:
        return None
    guid = uuid.UUID(bytes_le=data[:16])
    chars, size = struct.unpack_from("<QQ", data, 16)
    if chars > 1024 or 32 + 2 * chars + size > len(data):
        return None
    name = data[32 : 32 + 2 * chars].decode("utf-16-le", errors="replace")
    if guid in (EFI_GLOBAL_VARIABLE, EFI_IMAGE_SECURITY_DATABASE):
        return _printable(name)
    return _printable(f"{name} ({guid})")


def image_path(data: bytes) -> str | None:
    """The file path of a loaded EFI image (``\\EFI\\ubuntu\\shimx64.efi``) from the
    media file path nodes of its device path; None when it has none (a firmware volume)."""
    if len(data) < 32:
        return None
    (dp_len,) = struct.unpack_from("<Q", data, 24)
    path = data[32 : 32 + min(dp_len, len(data) - 32)]
    parts: list[str] = []
    pos = 0
    while pos + 4 <= len(path):
        kind, sub, length = path[pos], path[pos + 1], struct.unpack_from("<H", path, pos + 2)[0]
        if length < 4 or pos + length > len(path) or kind == 0x7F:  # end of the path
            break
        if kind == 0x04 and sub == 0x04:  # media, file path: a NUL-ended UCS-2 string
            text = path[pos + 4 : pos + length].decode("utf-16-le", errors="replace")
            parts.append(text.rstrip("\x00"))
        pos += length
    return _printable("".join(parts)) if parts else None


def _text(data: bytes) -> str:
    # EV_S_CRTM_VERSION is usually UCS-2 (PFP 10.4.1); the action strings are ASCII.
    wide = len(data) >= 4 and len(data) % 2 == 0 and not any(data[1::2])
    codec = "utf-16-le" if wide else "ascii"
    text = data.decode(codec, errors="replace").rstrip("\x00")
    return _printable(text) if text else f"{len(data)} bytes"


def _printable(text: str) -> str:
    # A log from the machine being judged may carry terminal escapes: show them as \x1b.
    shown = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)
    return shown if len(shown) <= _MAX_SHOWN else shown[:_MAX_SHOWN] + "..."
