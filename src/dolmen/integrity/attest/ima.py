"""The IMA measurement list (securityfs ``ima/ascii_runtime_measurements``), parsed.

Each line is ``PCR template-hash template file-digest path [signature]``. The kernel
extends PCR 10 with the template hash: in the sha1 bank the SHA1 of the template data the
line shows, in every other bank that bank's hash of the same data (Linux 5.8 and later;
older kernels zero-padded the SHA1, which this replay does not model: quote the sha1 bank
of PCR 10 there). A violation (a file measured while open for writing) is listed with a
hash of zeros and extends all ones. Template data, per field: a 32-bit little-endian
length, then the bytes; ``d-ng`` is ``<algorithm>:\\0<digest>``, ``n-ng`` the path and a
NUL, ``sig`` the signature bytes (Documentation/security/IMA-templates.rst).

The template data is rebuilt from the line and its SHA1 compared with the listed hash, so
a line whose file digest or path was edited is found. ``ima-ng``, ``ima-sig`` and
``ima-buf`` are rebuilt; another template replays in the sha1 bank only (its listed hash
taken as is) and is unverifiable in the others. Pure; malformed lines are problems.
"""

from __future__ import annotations

import hashlib
import re
import struct

from dolmen.frozen import frozen
from dolmen.integrity.attest import tcg

_HEX = re.compile(r"[0-9a-f]*")
_REBUILT = ("ima-ng", "ima-sig", "ima-buf")
MAX_LINES = 1 << 22


@frozen
class ImaEntry:
    """One measurement: the line number, PCR, listed template hash, template name, file
    digest (``sha256:...``), path, and the rebuilt template data (None: not rebuilt)."""

    line: int
    pcr: int
    template_hash: bytes
    template: str
    file_digest: str
    path: str
    template_data: bytes | None

    @property
    def violation(self) -> bool:
        """A measurement violation: listed with zeros, extended with all ones."""
        return not any(self.template_hash)

    def bank_digest(self, bank: str) -> bytes | None:
        """What this entry extended into ``bank``; None when it cannot be known."""
        alg = tcg.BY_NAME.get(bank)
        if alg is None:
            return None
        if self.violation:
            return b"\xff" * alg.size
        if bank == "sha1":
            return self.template_hash
        if self.template_data is None:
            return None
        return tcg.digest(bank, self.template_data)

    def unverifiable(self, bank: str) -> str:
        """Why ``bank_digest`` is None, in words."""
        return (
            f"IMA line {self.line}: template {self.template!r} is not rebuilt, so its {bank} "
            "digest is unknown (quote the sha1 bank of PCR 10)"
        )


@frozen
class ImaList:
    """The entries read and the problems found (a malformed or edited line)."""

    entries: tuple[ImaEntry, ...]
    problems: tuple[str, ...]


def parse_ima_list(text: str) -> ImaList:
    """The entries of an ascii_runtime_measurements file (see the module docstring)."""
    entries: list[ImaEntry] = []
    problems: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        if number > MAX_LINES:
            problems.append(f"more than {MAX_LINES} lines")
            break
        if not raw.strip():
            continue
        entry = _entry(number, raw)
        if isinstance(entry, str):
            problems.append(f"line {number}: {entry}")
            break  # the PCR's value after a line that cannot be read is unknown
        entries.append(entry)
    return ImaList(tuple(entries), tuple(problems))


def _entry(number: int, raw: str) -> ImaEntry | str:
    parts = raw.split(" ", 4)
    if len(parts) < 5:
        return "not 'PCR template-hash template digest path'"
    pcr_text, hash_text, template, digest_text, rest = parts
    if not pcr_text.isdigit() or int(pcr_text) > 23:
        return f"PCR {pcr_text[:20]!r} is not 0 to 23"
    if len(hash_text) != 40 or not _HEX.fullmatch(hash_text):
        return "the template hash is not 40 hex digits"
    listed = bytes.fromhex(hash_text)
    pcr = int(pcr_text)
    if template not in _REBUILT:
        return ImaEntry(number, pcr, listed, template, digest_text, rest, None)
    candidates = _readings(template, rest)
    if not any(listed):  # a violation: its data is not what was hashed
        return ImaEntry(number, pcr, listed, template, digest_text, candidates[0][0], None)
    tried = False
    for path, extra in candidates:
        data = _template_data(digest_text, path, extra)
        if data is None:
            continue
        tried = True
        if hashlib.sha1(data).digest() == listed:
            return ImaEntry(number, pcr, listed, template, digest_text, path, data)
    if not tried:
        return f"the file digest {digest_text[:80]!r} is not '<algorithm>:<hex>'"
    return "its template hash is not the SHA1 of what it lists (an edited line)"


def _readings(template: str, rest: str) -> list[tuple[str, bytes | None]]:
    """The ways to split ``path [signature|buffer]``: a path may hold spaces, so the last
    word is the extra field only if the hash then matches (tried in order)."""
    if template == "ima-ng":
        return [(rest, None)]
    head, _, last = rest.rpartition(" ")
    out: list[tuple[str, bytes | None]] = []
    if head and _HEX.fullmatch(last) and len(last) % 2 == 0:
        out.append((head, bytes.fromhex(last)))
    out.append((rest, b""))  # no signature: an empty sig field
    return out


def _template_data(digest_text: str, path: str, extra: bytes | None) -> bytes | None:
    alg, sep, hex_digest = digest_text.partition(":")
    if not sep or not alg or not _HEX.fullmatch(hex_digest) or len(hex_digest) % 2:
        return None
    d_ng = alg.encode() + b":\x00" + bytes.fromhex(hex_digest)
    n_ng = path.encode("utf-8", errors="surrogateescape") + b"\x00"
    fields = [d_ng, n_ng] + ([] if extra is None else [extra])
    return b"".join(struct.pack("<I", len(f)) + f for f in fields)
