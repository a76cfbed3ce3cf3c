"""Regular expressions compiled on first use, not at import.

The kernel-log catalogue holds a few dozen patterns, and a clean log runs only the
prefilter and the time-stamp patterns: the rest match lines a healthy host never
prints. Compiling them all at import cost the quick tier (the Slurm health check,
started every few minutes on every node) several milliseconds of every start; a
``Lazy`` compiles its pattern the first time a line needs it, once per process, from
the form ``python -m dolmen.frozen`` captured (``dolmen.frozen.regex``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from dolmen.frozen import regex


class Lazy:
    """A pattern with the ``re.Pattern`` methods the parsers use, compiled on first call."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None
        regex.REGISTRY[(pattern, int(flags))] = None  # for the generator; compiled when used

    @property
    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern (compiled now if no line needed it yet)."""
        if self._compiled is None:
            self._compiled = regex.pattern(self.pattern, self.flags)
        return self._compiled

    def search(self, text: str) -> re.Match[str] | None:
        return self.compiled.search(text)

    def match(self, text: str) -> re.Match[str] | None:
        return self.compiled.match(text)

    def findall(self, text: str) -> list[Any]:
        return self.compiled.findall(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(text)

    def __repr__(self) -> str:
        return f"Lazy({self.pattern!r})"
