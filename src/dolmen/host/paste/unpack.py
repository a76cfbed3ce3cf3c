"""The bytes of a pasted file, compressed or not, read within bounds.

A pasted file is read once, whole, through ``fsutil.read_regular`` (regular files only:
a FIFO would block, a device would never end) and, when it starts with a gzip, xz or
bzip2 magic, decompressed in chunks that stop at ``MAX_BYTES``: a 1 GB sparse file
gzips to about a megabyte, and is refused after 64 MiB, not inflated.
"""

from __future__ import annotations

import bz2
import lzma
import zlib
from collections.abc import Iterator
from pathlib import Path

from dolmen.errors import InputError
from dolmen.fsutil import read_regular
from dolmen.host.base import MAX_READ

MAX_BYTES = MAX_READ  # what one read of a host tree takes in: a larger paste could not be read
_CHUNK = 1 << 20
_HINT = "--from takes a folder, a snapshot .tar.gz, a sosreport, or one command's output"


def compression(head: bytes) -> str | None:
    """``gzip``, ``xz`` or ``bzip2`` from a file's first bytes; None when it is not compressed."""
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if head[:6] == b"\xfd7zXZ\x00":
        return "xz"
    if head[:3] == b"BZh":
        return "bzip2"
    return None


def read_file(path: Path) -> tuple[bytes, str | None]:
    """The file's bytes, decompressed, and the compression it had; InputError otherwise."""
    try:
        raw = read_regular(path, MAX_BYTES)
    except OSError as e:
        raise InputError(
            f"cannot read it ({e.strerror or e})", path=str(path), hint=_HINT
        ) from None
    kind = compression(raw)
    if kind is None:
        return raw, None
    return inflate(raw, kind, str(path)), kind


def inflate(raw: bytes, kind: str, where: str, limit: int = MAX_BYTES) -> bytes:
    """``raw`` decompressed (several concatenated members too), refused past ``limit``
    bytes; a truncated stream keeps what came out before the cut, as ``zcat`` does."""
    out: list[bytes] = []
    size = 0
    try:
        for piece in _pieces(raw, kind):
            size += len(piece)
            if size > limit:
                raise InputError(
                    f"decompresses to more than {limit >> 20} MiB: larger than any command's "
                    "output or kernel log dolmen reads; refused",
                    path=where,
                    hint="paste the uncompressed part that matters",
                )
            out.append(piece)
    except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError) as e:
        if not out:
            raise InputError(f"damaged {kind} data ({e})", path=where, hint=_HINT) from None
    return b"".join(out)


def _pieces(data: bytes, kind: str) -> Iterator[bytes]:
    """Decompressed chunks of at most ``_CHUNK`` bytes, member after member."""
    while data:
        if kind == "gzip":
            z = zlib.decompressobj(zlib.MAX_WBITS | 16)
            piece = z.decompress(data, _CHUNK)
            yield piece
            while z.unconsumed_tail or (piece and not z.eof):
                piece = z.decompress(z.unconsumed_tail, _CHUNK)
                if not piece and not z.unconsumed_tail:
                    break
                yield piece
            if not z.eof:
                return  # truncated
            data = z.unused_data
            continue
        d: lzma.LZMADecompressor | bz2.BZ2Decompressor = (
            lzma.LZMADecompressor() if kind == "xz" else bz2.BZ2Decompressor()
        )
        pending = data
        while not d.eof:
            piece = d.decompress(pending, _CHUNK)
            pending = b""
            yield piece
            if d.needs_input and not d.eof:
                return  # truncated
        data = d.unused_data
