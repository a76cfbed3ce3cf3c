"""The LUKS header, parsed from a device's first bytes: version, UUID, cipher, keyslots, tokens.

Pure: ``parse_header(data)`` takes the bytes read from the start of a device or image
(``host.blockdev.read_head``) and never raises. Layout (cryptsetup's
docs/on-disk-format-luks2.pdf): a 4096-byte binary header, big-endian, then the JSON
metadata area; ``hdr_size`` covers both. The header is stored twice (the secondary copy
starts at ``hdr_size``); the SHA-256 checksum over the whole area, computed with the
checksum field zeroed, tells a torn or hostile copy from a good one, and cryptsetup
itself falls back to the secondary copy when the primary fails it. LUKS1 shares the
magic and the UUID offset but has no JSON area, no tokens: it is reported as version 1
with the cipher of its binary header.

``parse_metadata(obj)`` reads the JSON area alone, so the same facts come from a recorded
``cryptsetup luksDump --dump-json-metadata`` (host trees, snapshots) as from the bytes.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Mapping
from typing import Any

from dolmen.frozen import frozen

MAGIC = b"LUKS\xba\xbe"
SECONDARY_MAGIC = b"SKUL\xba\xbe"
BINARY_SIZE = 4096
# The sizes of the metadata area cryptsetup allows (--luks2-metadata-size + 4 KiB binary).
HDR_SIZES = tuple(1 << n for n in range(14, 23))  # 16 KiB .. 4 MiB
MAX_READ = 2 * HDR_SIZES[-1]  # both copies of the largest header

# Token types of the unlock methods people bind (systemd-cryptenroll, Clevis, dolmen).
TPM2_TOKENS = frozenset({"systemd-tpm2"})
CLEVIS_TOKENS = frozenset({"clevis"})
DOLMEN_TOKEN = "dolmen"


@frozen
class Keyslot:
    """One keyslot: its number, type, key size in bytes, area cipher and KDF."""

    slot: int
    type: str
    key_size: int | None
    cipher: str | None
    kdf: str | None  # argon2id, argon2i, pbkdf2


@frozen
class Token:
    """One token: its number, type (``systemd-tpm2``, ``clevis``, ``dolmen``) and keyslots."""

    token: int
    type: str
    keyslots: tuple[int, ...]


@frozen
class LuksHeader:
    """What a LUKS header says. ``version`` 1 has no tokens and one cipher for everything."""

    version: int
    uuid: str
    label: str = ""
    cipher: str | None = None  # of data segment 0 (aes-xts-plain64); LUKS1: name-mode
    key_bits: int | None = None  # the volume key size in bits
    sector_size: int | None = None
    keyslots: tuple[Keyslot, ...] = ()
    tokens: tuple[Token, ...] = ()
    copy: str = "primary"  # which header copy was read: primary, secondary, json

    @property
    def token_types(self) -> tuple[str, ...]:
        """The sorted distinct token types."""
        return tuple(sorted({t.type for t in self.tokens}))

    @property
    def tpm2(self) -> bool:
        """Whether a TPM2 token (systemd-cryptenroll) is bound."""
        return any(t.type in TPM2_TOKENS for t in self.tokens)

    @property
    def clevis(self) -> bool:
        """Whether a Clevis token (tang, tpm2, sss pins) is bound."""
        return any(t.type in CLEVIS_TOKENS for t in self.tokens)


@frozen
class Parsed:
    """A header, or None and the reason words (``not LUKS``, ``malformed: ...``, ``cut off``)."""

    header: LuksHeader | None
    reason: str = ""


NOT_LUKS = "not LUKS"


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("ascii", errors="replace")


def parse_header(data: bytes) -> Parsed:
    """The LUKS header at the start of ``data`` (see module docstring); never raises."""
    if len(data) < 6:
        return Parsed(None, "cut off: fewer than 6 bytes" if data else "cut off: empty")
    if data[:6] != MAGIC:
        return Parsed(None, NOT_LUKS)
    if len(data) < 8:
        return Parsed(None, "cut off: no version")
    version = struct.unpack(">H", data[6:8])[0]
    if version == 1:
        return _luks1(data)
    if version != 2:
        return Parsed(None, f"malformed: LUKS version {version}")
    first = _luks2_copy(data, 0)
    if first.header is not None:
        return first
    # The primary copy is torn or forged: read the secondary at each size LUKS2 allows.
    for offset in HDR_SIZES:
        if data[offset : offset + 6] == SECONDARY_MAGIC:
            second = _luks2_copy(data, offset)
            if second.header is not None:
                return Parsed(_with_copy(second.header, "secondary"))
    return first


def read_size(head: bytes) -> int:
    """How many bytes hold both copies of the header that starts with ``head`` (its first
    4 KiB): ``2 * hdr_size`` for a sound LUKS2 binary header, else ``MAX_READ`` (a torn
    primary: the secondary may be at any offset LUKS2 allows)."""
    if head[:6] == MAGIC and head[6:8] == b"\0\2" and len(head) >= 16:
        size = struct.unpack(">Q", head[8:16])[0]
        if size in HDR_SIZES:
            return 2 * int(size)
    return MAX_READ


def _with_copy(h: LuksHeader, copy: str) -> LuksHeader:
    return LuksHeader(
        h.version, h.uuid, h.label, h.cipher, h.key_bits, h.sector_size, h.keyslots, h.tokens, copy
    )


def _luks1(data: bytes) -> Parsed:
    if len(data) < 208:
        return Parsed(None, "cut off: LUKS1 header shorter than 208 bytes")
    cipher = f"{_text(data[8:40])}-{_text(data[40:72])}"
    key_bytes = struct.unpack(">I", data[108:112])[0]
    # LUKS1's 8 keyslots start at 208, 48 bytes each; the first word is 0x00AC71F3 if active.
    slots = []
    for n in range(8):
        at = 208 + 48 * n
        if len(data) >= at + 4 and struct.unpack(">I", data[at : at + 4])[0] == 0x00AC71F3:
            slots.append(Keyslot(n, "luks1", key_bytes, cipher, "pbkdf2"))
    uuid = _text(data[168:208])
    return Parsed(LuksHeader(1, uuid, "", cipher, key_bytes * 8, 512, tuple(slots), ()))


def _luks2_copy(data: bytes, offset: int) -> Parsed:
    head = data[offset : offset + BINARY_SIZE]
    if len(head) < BINARY_SIZE:
        return Parsed(None, f"cut off: binary header shorter than {BINARY_SIZE} bytes")
    hdr_size = struct.unpack(">Q", head[8:16])[0]
    if hdr_size not in HDR_SIZES:
        return Parsed(None, f"malformed: header size {hdr_size}")
    area = data[offset : offset + hdr_size]
    if len(area) < hdr_size:
        return Parsed(None, f"cut off: JSON area ends before {hdr_size} bytes")
    alg = _text(head[72:104])
    if alg != "sha256":
        return Parsed(None, f"malformed: checksum algorithm {alg!r}")
    zeroed = area[:448] + b"\0" * 64 + area[512:]
    if hashlib.sha256(zeroed).digest() != head[448:480]:
        return Parsed(None, "malformed: header checksum does not match")
    raw_json = area[BINARY_SIZE:].split(b"\0", 1)[0]
    try:
        meta = json.loads(raw_json.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return Parsed(None, "malformed: JSON area is not JSON")
    return parse_metadata(meta, uuid=_text(head[168:208]), label=_text(head[24:72]))


def parse_metadata(meta: object, *, uuid: str = "", label: str = "") -> Parsed:
    """The LUKS2 JSON metadata (keyslots, tokens, segments): from the header's JSON area or
    ``cryptsetup luksDump --dump-json-metadata``, which does not print the UUID."""
    if not isinstance(meta, Mapping):
        return Parsed(None, "malformed: metadata is not a JSON object")
    try:
        keyslots = tuple(_keyslot(k, v) for k, v in _items(meta, "keyslots"))
        tokens = tuple(_token(k, v) for k, v in _items(meta, "tokens"))
        segments = dict(_items(meta, "segments"))
    except (TypeError, ValueError, KeyError) as e:
        return Parsed(None, f"malformed: {e}")
    seg = segments.get("0", {})
    cipher = seg.get("encryption") if isinstance(seg, Mapping) else None
    sector = seg.get("sector_size") if isinstance(seg, Mapping) else None
    sizes = [s.key_size for s in keyslots if s.key_size]
    header = LuksHeader(
        2,
        uuid,
        label,
        cipher if isinstance(cipher, str) else None,
        sizes[0] * 8 if sizes else None,
        sector if isinstance(sector, int) and not isinstance(sector, bool) else None,
        tuple(sorted(keyslots, key=lambda s: s.slot)),
        tuple(sorted(tokens, key=lambda t: t.token)),
        "primary" if uuid else "json",
    )
    return Parsed(header)


def parse_dump_json(text: str) -> Parsed:
    """``cryptsetup luksDump --dump-json-metadata DEVICE`` output."""
    try:
        return parse_metadata(json.loads(text))
    except ValueError:
        return Parsed(None, "malformed: luksDump output is not JSON")


def _items(meta: Mapping[str, Any], key: str) -> list[tuple[str, Any]]:
    section = meta.get(key, {})
    if not isinstance(section, Mapping):
        raise TypeError(f"{key} is not an object")
    return [(str(k), v) for k, v in section.items()]


def _number(key: str) -> int:
    n = int(key)  # ValueError on junk
    if n < 0 or n > 1024 or not key.isdigit():
        raise ValueError(f"bad number {key!r}")
    return n


def _keyslot(key: str, v: Any) -> Keyslot:
    if not isinstance(v, Mapping):
        raise TypeError(f"keyslot {key} is not an object")
    area, kdf = v.get("area", {}), v.get("kdf", {})
    size = v.get("key_size")
    return Keyslot(
        _number(key),
        str(v.get("type", "?")),
        size if isinstance(size, int) and not isinstance(size, bool) else None,
        _str(area, "encryption"),
        _str(kdf, "type"),
    )


def _token(key: str, v: Any) -> Token:
    if not isinstance(v, Mapping):
        raise TypeError(f"token {key} is not an object")
    slots = v.get("keyslots", [])
    if not isinstance(slots, list):
        raise TypeError(f"token {key} keyslots is not a list")
    return Token(_number(key), str(v.get("type", "?")), tuple(_number(str(s)) for s in slots))


def _str(obj: Any, key: str) -> str | None:
    if isinstance(obj, Mapping):
        value = obj.get(key)
        return value if isinstance(value, str) else None
    return None
