"""split_url: a URL dolmen can use, or None (never urllib's ValueError)."""

from __future__ import annotations

import pytest

from dolmen.values.url import split_url


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [
        ("tcp://127.0.0.1:514", "127.0.0.1", 514),
        ("tls://[::1]:6514", "::1", 6514),
        ("https://vault.example:8200/", "vault.example", 8200),
        ("http://node1", "node1", None),
    ],
)
def test_urls_split(text: str, host: str, port: int | None) -> None:
    parts = split_url(text)
    assert parts is not None and parts.hostname == host and parts.port == port


@pytest.mark.parametrize(
    "text", ["tcp://[::1", "http://[::1:80", "tcp://h:99999", "tcp://h:-1", "tcp://h:0", "x://h:p"]
)
def test_what_is_not_a_usable_url_is_none(text: str) -> None:
    assert split_url(text) is None
