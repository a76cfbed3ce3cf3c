"""Manifests as YAML text, without a YAML library: block style, string values double-quoted.

A JSON string is a valid YAML double-quoted scalar, so quoting every string with
``json.dumps`` keeps values such as ``"None"``, ``"0"`` or ``"on"`` strings (the
Norway problem) and needs no escaping rules of our own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def dump_all(docs: Iterable[Mapping[str, Any]]) -> str:
    """Several documents separated by ``---``."""
    return "".join(f"---\n{dump(d)}" for d in docs)


def dump(doc: Mapping[str, Any]) -> str:
    """One document."""
    return "".join(f"{line}\n" for line in _mapping(doc, 0))


_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*$")
# YAML 1.1 readers (PyYAML, older kubectl) take these as booleans or null when unquoted.
_SPECIAL = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}


def _key(key: str) -> str:
    if _PLAIN_KEY.match(key) and key.lower() not in _SPECIAL:
        return key
    return json.dumps(key)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(str(value))


def _mapping(doc: Mapping[str, Any], indent: int) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    for key, value in doc.items():
        inline, nested = _node(value, indent + 2)
        lines.append(f"{pad}{_key(str(key))}:{inline}")
        lines.extend(nested)
    return lines


def _sequence(items: Sequence[Any], indent: int) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    for item in items:
        if isinstance(item, Mapping) and item:  # "- " then the mapping's first key
            body = _mapping(item, indent + 2)
            lines.append(f"{pad}- {body[0].lstrip()}")
            lines.extend(body[1:])
            continue
        inline, nested = _node(item, indent + 2)
        lines.append(f"{pad}-{inline}")
        lines.extend(nested)
    return lines


def _node(value: Any, indent: int) -> tuple[str, list[str]]:
    """What follows ``key:`` or ``-`` on its line, and the block lines below it: a non-empty
    mapping or list goes below, an empty one is written inline (``{}``, ``[]``)."""
    if isinstance(value, Mapping):
        return ("", _mapping(value, indent)) if value else (" {}", [])
    if isinstance(value, Sequence) and not isinstance(value, str):
        return ("", _sequence(value, indent)) if value else (" []", [])
    return f" {_scalar(value)}", []
