"""A URL dolmen was given (an exporter's ``--to``, a fleet source, ``[keys] vault_address``).

``urllib.parse.urlsplit`` raises ValueError on some text (an unclosed IPv6 bracket:
``tcp://[::1``) and ``.port`` on others (``:99999``, ``:-1``); each place that takes a URL
asks ``split_url`` and says in its own words what it expected when the answer is None.
"""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit


def split_url(text: str) -> SplitResult | None:
    """``text`` split as a URL whose port, if any, is one a socket can use; None when it is
    not one."""
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    if port == 0:
        return None
    return parts
