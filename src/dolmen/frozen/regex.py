"""``pattern(text, flags)``: ``re.compile``, without compiling on the quick path.

``re.compile`` parses a pattern and assembles the matcher's code in Python: 0.05 ms a
pattern, 0.25 ms for a large character class; the 60 patterns the quick tier's modules
define at import cost it 30 million instructions a start, a tenth of a run (issue 8).
``python -m dolmen.frozen`` compiles every pattern made through ``pattern`` once and
writes what ``re`` hands to the C engine (``_sre.compile``: flags, code, groups) into
frozen/compiled/regex.py; ``pattern`` then hands the same values to the same function,
so the result is the very ``re.Pattern`` that ``re.compile`` makes (equal, same flags,
groups and group names). A pattern the file does not hold (new, or changed), a Python
other than the one it was captured on, or another matcher version (``_sre.MAGIC``)
compiles through ``re`` as before: a stale file costs time, never correctness, and a
conformance test says when it is stale.
"""

from __future__ import annotations

import _sre  # type: ignore[import-not-found]  # no stub: compile and MAGIC
import re
import sys
from typing import Any

MAGIC = _sre.MAGIC  # the matcher's code version
# Every pattern made in this process: what the generator captures (module-level patterns
# of the modules it imports).
REGISTRY: dict[tuple[str, int], None] = {}


Compiled = tuple[int, tuple[int, ...], int, dict[str, int], tuple[str | None, ...]]


def _table() -> dict[tuple[str, int], Compiled]:
    """The captured patterns, or none where they were captured for another Python."""
    try:
        from dolmen.frozen.compiled import regex
    except Exception:  # absent (the generator's first run) or broken: compile as re does
        return {}
    if sys.version_info[:2] != regex.PYTHON or regex.MAGIC != MAGIC:
        return {}
    return regex.PATTERNS


_TABLE = _table()


def pattern(text: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(text, flags)``, from its captured compiled form when there is one."""
    key = (text, int(flags))
    REGISTRY[key] = None
    made = _TABLE.get(key)
    if made is None:
        return re.compile(text, flags)
    final, code, groups, groupindex, indexgroup = made
    made_pattern: re.Pattern[str] = _sre.compile(
        text, final, list(code), groups, groupindex, indexgroup
    )
    return made_pattern


def capture(text: str, flags: int) -> tuple[object, ...]:
    """The arguments ``re.compile(text, flags)`` hands to ``_sre.compile``, read from
    ``re``'s own compiler (the generator's one look at a private part of ``re``)."""
    compiler = sys.modules.get("re._compiler") or sys.modules["sre_compile"]
    seen: list[tuple[object, ...]] = []
    real = compiler._sre

    class Watch:
        """``_sre`` with its ``compile`` watched."""

        @staticmethod
        def compile(*args: object) -> object:
            seen.append(args)
            return real.compile(*args)

        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

    compiler._sre = Watch()  # type: ignore[attr-defined]
    try:
        re.purge()
        re.compile(text, flags)
    finally:
        compiler._sre = real  # type: ignore[attr-defined]
    args: Any = seen[-1]
    _, final, code, groups, groupindex, indexgroup = args
    return int(final), tuple(int(c) for c in code), int(groups), dict(groupindex), tuple(indexgroup)
