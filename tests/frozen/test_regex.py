"""``dolmen.frozen.regex.pattern`` gives the very pattern ``re.compile`` makes, from the
captured table when it holds the pattern and through ``re`` when it does not."""

from __future__ import annotations

import re
import sys

import pytest

from dolmen.frozen import regex
from dolmen.frozen.compiled import regex as table
from dolmen.frozen.generate import USES_PATTERN, modules

for _module in modules(USES_PATTERN):  # every module-level pattern, registered
    __import__(_module)


def _same(made: re.Pattern[str], text: str, flags: int) -> None:
    expected = re.compile(text, flags)
    assert made == expected  # same flags, pattern text and code
    assert (made.flags, made.groups, made.groupindex) == (
        expected.flags,
        expected.groups,
        expected.groupindex,
    )


def _captured() -> list[tuple[str, int]]:
    if sys.version_info[:2] != table.PYTHON or table.MAGIC != regex.MAGIC:
        pytest.skip(f"the table was captured on Python {table.PYTHON}")
    return sorted(table.PATTERNS)


def test_every_captured_pattern_is_the_one_re_compiles() -> None:
    keys = _captured()
    assert len(keys) > 50
    for text, flags in keys:
        _same(regex.pattern(text, flags), text, flags)


def test_the_quick_path_patterns_come_from_the_table() -> None:
    _captured()
    from dolmen.values import busid, text

    for made in (busid._SPELLING, text._UNSAFE):  # flags as written: re adds UNICODE
        assert (made.pattern, made.flags & ~re.UNICODE) in regex._TABLE


CASES = [
    (r"not (?P<in>the) table \d{3}", 0),
    (r"^[a-z]+$", int(re.M | re.I)),
    ("[\u0100-\u0200]+", 0),
]


@pytest.mark.parametrize(("text", "flags"), CASES)
def test_a_pattern_the_table_lacks_compiles_through_re(text: str, flags: int) -> None:
    assert (text, int(flags)) not in table.PATTERNS
    _same(regex.pattern(text, flags), text, flags)
    assert (text, int(flags)) in regex.REGISTRY  # the generator would capture it


def test_a_bad_pattern_raises_as_re_does() -> None:
    with pytest.raises(re.error):
        regex.pattern(r"(unclosed")


def test_every_registered_pattern_is_captured() -> None:
    made_here = {text for text, _ in CASES} | {r"(unclosed"}
    missing = {key for key in regex.REGISTRY if key[0] not in made_here} - set(_captured())
    assert not missing, "run: python -m dolmen.frozen"
