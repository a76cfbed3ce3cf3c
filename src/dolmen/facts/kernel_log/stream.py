"""Lines of a log without holding the log: from byte chunks, or from one text.

A kernel log may be a rotated syslog of millions of lines. ``split_lines`` turns a
stream of byte chunks into the lines ``str.splitlines`` would give for the whole text
(``\\n`` first, then each piece split the way ``splitlines`` splits it, so ``\\r`` and
``\\x85`` end a line for a streamed log as for one held whole), each line cut at
``MAX_LINE`` bytes. ``text_lines`` does the same for a text already in memory (a live
``dmesg``), without the list of every line that ``splitlines`` would build.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

MAX_LINE = 1 << 16  # printk lines are at most 1 KiB; a longer "line" is cut here


def split_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """Every line of a byte stream (UTF-8, undecodable bytes replaced), as ``splitlines``
    splits the whole text; an overlong line is cut at ``MAX_LINE`` bytes and the rest of it
    dropped, so line numbers stay those of the file."""
    for raw in _split(chunks):
        yield from raw.decode("utf-8", errors="replace").splitlines() or [""]


def text_lines(text: str) -> Iterator[str]:
    """Every line of ``text`` as ``text.splitlines()`` gives them, one at a time."""
    start = 0
    end = len(text)
    while start < end:
        nl = text.find("\n", start)
        if nl < 0:
            nl = end
        yield from text[start:nl].splitlines() or [""]
        start = nl + 1


def _split(chunks: Iterable[bytes]) -> Iterator[bytes]:
    pending = bytearray()
    full = False  # pending holds MAX_LINE bytes: drop the rest of this line
    for chunk in chunks:
        start = 0
        while (nl := chunk.find(b"\n", start)) >= 0:
            if not full:
                pending += chunk[start:nl]
            yield bytes(pending[:MAX_LINE])
            pending.clear()
            full = False
            start = nl + 1
        if not full:
            pending += chunk[start:]
            if len(pending) >= MAX_LINE:
                del pending[MAX_LINE:]
                full = True
    if pending:
        yield bytes(pending)
