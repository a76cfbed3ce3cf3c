"""Text from a host, shown on a terminal: control characters made visible, never obeyed.

A bundle's hostname, a kernel-log line, a GPU's model name are someone else's bytes.
Printed raw, ``ESC ] 0 ;`` retitles the operator's window, ``ESC [ 2 J`` clears the
screen, ``\\r`` overwrites a FAIL with a PASS, and a right-to-left override
(U+202E) reverses what follows. ``printable(text)`` is the one rule for everything
dolmen prints from a host: each such character becomes its Python escape
(``\\x1b``, ``\\r``, ``\\u202e``), so the operator sees that it was there. JSON
output does not use it: JSON escapes control characters itself and stays exact data.
"""

from __future__ import annotations

import re

from dolmen.frozen.regex import pattern

# C0 controls, DEL, C1 controls (every category Cc), the line and paragraph separators
# (which terminals and pagers may break lines on), and the bidirectional controls of
# Unicode's UAX #9 (embeddings, overrides, isolates, marks): what the Trojan Source
# attack (CVE-2021-42574) used to make text read differently from what it is.
_UNSAFE = pattern("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def printable(text: str) -> str:
    """``text`` with every control character written as its escape (see module docstring)."""
    if _UNSAFE.search(text) is None:
        return text  # the common case: one scan, no copy
    return _UNSAFE.sub(_escape, text)


def _escape(m: re.Match[str]) -> str:
    ch = m.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
