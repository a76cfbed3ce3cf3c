"""``values.text.printable``: every control character of host text made visible."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dolmen.values.text import printable

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("gpu01", "gpu01"),
        ("gpu01\x1b]0;owned\x07", "gpu01\\x1b]0;owned\\x07"),  # retitles the window
        ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),  # clears the screen
        ("FAIL\rPASS", "FAIL\\rPASS"),
        ("a\bb\tc\nd", "a\\x08b\\tc\\nd"),
        ("\x9b31m\x85\x7f", "\\x9b31m\\x85\\x7f"),  # C1 CSI, NEL, DEL
        ("abc\u202edcba", "abc\\u202edcba"),  # right-to-left override
        ("line\u2028sep", "line\\u2028sep"),
        ("NVIDIA H100 80GB HBM3 é ü 中", "NVIDIA H100 80GB HBM3 é ü 中"),  # text stays text
    ],
)
def test_printable(raw: str, shown: str) -> None:
    assert printable(raw) == shown


def _unsafe(ch: str) -> bool:
    return unicodedata.category(ch) == "Cc" or ch in BIDI or ch in "\u2028\u2029"


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(BIDI + "\x1b\x9b\r\b")))
def test_no_control_character_survives(text: str) -> None:
    out = printable(text)
    assert not any(_unsafe(c) for c in out)
    if not any(_unsafe(c) for c in text):
        assert out == text  # nothing else is touched
