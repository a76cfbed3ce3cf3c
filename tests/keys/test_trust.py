"""The trust store: one pinned key and its epoch per line; malformed lines are named."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from dolmen.errors import InputError
from dolmen.keys import PublicKey
from dolmen.keys.trust import add_trusted_key, load_trusted_keys, parse_trusted_keys, trust_line

RAW = bytes(range(32))
B64 = base64.b64encode(RAW).decode()


def test_parse_lines_comments_and_blanks() -> None:
    text = f"# pinned by config management\n\ned25519 3 {B64}  # node1\n"
    store = parse_trusted_keys(text)
    key = PublicKey("ed25519", RAW)
    assert list(store) == [key.key_id]
    assert store[key.key_id].epoch == 3 and store[key.key_id].key == key
    assert parse_trusted_keys(trust_line(key, 3)) == store
    assert parse_trusted_keys("") == {}


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (f"rsa 1 {B64}", "unknown algorithm"),
        (f"ed25519 0 {B64}", "positive integer"),
        (f"ed25519 x {B64}", "positive integer"),
        ("ed25519 1 not*base64", "not base64"),
        (f"ed25519 1 {base64.b64encode(RAW[:16]).decode()}", "32 bytes"),
        (f"ed25519 {B64}", "expected"),
        (f"ed25519 1 {B64} extra", "expected"),
    ],
)
def test_malformed_lines_name_the_line(text: str, why: str) -> None:
    with pytest.raises(InputError, match=why) as info:
        parse_trusted_keys("# header\n" + text + "\n", "trust")
    assert info.value.line == 2 and "trust:2" in info.value.message


def test_load_and_add(tmp_path: Path) -> None:
    path = tmp_path / "etc" / "trusted"
    assert load_trusted_keys(path) is None
    key = PublicKey("ed25519", RAW)
    add_trusted_key(path, key, 1)
    add_trusted_key(path, PublicKey("ed25519", RAW[::-1]), 2)
    store = load_trusted_keys(path)
    assert store is not None and len(store) == 2 and store[key.key_id].epoch == 1
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(InputError, match="cannot read"):
        load_trusted_keys(path)
