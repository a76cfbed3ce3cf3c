"""A log as blocks of whole lines, never held whole: from byte chunks, or from one text.

A kernel log may be a rotated syslog of millions of lines. ``text_blocks`` turns a
stream of byte chunks (UTF-8, undecodable bytes replaced, a character split between two
chunks kept whole) into text blocks that end at a ``\\n``, so that splitting each block
with ``str.splitlines`` gives the lines ``splitlines`` would give for the whole text
(``\\r`` and ``\\x85`` end a line for a streamed log as for one held whole). A line
longer than ``MAX_LINE`` characters is cut there and the rest of it dropped, so line
numbers stay those of the file and a file without a line break cannot fill memory.
``blocks_of`` cuts a text already in memory (a live ``dmesg``) the same way. Blocks, not
lines, so the scanner can run its prefilter over a whole block at C speed.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator

MAX_LINE = 1 << 16  # printk lines are at most 1 KiB; a longer "line" is cut here
BLOCK = 1 << 16  # characters per block of a text held whole


def text_blocks(chunks: Iterable[bytes]) -> Iterator[str]:
    """Blocks of whole lines of a byte stream (see module docstring)."""
    decode = codecs.getincrementaldecoder("utf-8")(errors="replace").decode
    carry = ""
    skipping = False  # dropping the rest of an overlong line, up to its "\n"
    for chunk in chunks:
        text = decode(chunk)
        if skipping:
            nl = text.find("\n")
            if nl < 0:
                continue
            text, skipping = text[nl + 1 :], False
        text = carry + text
        cut = text.rfind("\n")
        if cut < 0:
            carry = text
        else:
            carry = text[cut + 1 :]
            yield _cut(text[: cut + 1])
        if len(carry) > MAX_LINE:
            carry, skipping = carry[:MAX_LINE] + "\n", True
            yield carry
            carry = ""
    carry += decode(b"", final=True)
    if carry and not skipping:
        yield _cut(carry)


def blocks_of(text: str, size: int = BLOCK) -> Iterator[str]:
    """``text`` in blocks of about ``size`` characters, each ending at a ``\\n``."""
    start, end = 0, len(text)
    while start < end:
        cut = text.find("\n", min(start + size, end) - 1)
        stop = end if cut < 0 else cut + 1
        yield _cut(text[start:stop])
        start = stop


def split_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """Every line of a byte stream, one at a time (``text_blocks``, each split)."""
    for block in text_blocks(chunks):
        yield from block.splitlines()


def _cut(block: str) -> str:
    """The block with each line longer than ``MAX_LINE`` cut there (rarely needed: a
    block without such a line is returned as it is)."""
    if len(block) <= MAX_LINE or max(map(len, block.split("\n"))) <= MAX_LINE:
        return block
    return "\n".join(line[:MAX_LINE] for line in block.split("\n"))
