"""One edit of a JSON document at a dotted path, for the malformed-document tables of the
report tests (``findings.0.summary``: a number is a list index)."""

from __future__ import annotations

from typing import Any

DELETE = object()  # the value that removes the key instead


def set_at(doc: Any, path: str, value: Any) -> Any:
    """``doc`` with the value at ``path`` set to ``value`` (or removed: ``DELETE``), in
    place; returns ``doc``."""
    *head, last = path.split(".")
    node: Any = doc
    for key in head:
        node = node[int(key)] if key.isdigit() else node[key]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return doc
