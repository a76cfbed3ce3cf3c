"""The JSON Schemas (draft 2020-12) of dolmen's machine outputs, shipped as package data.

Every ``--json`` document carries ``"schema": "dolmen.<name>/<version>"``; the file
``<name>.schema.json`` here has that string as its ``$id``, so a consumer (a script, a CI
job, node-problem-detector's wrapper) fetches the contract with ``dolmen schema NAME``
and validates what it reads instead of guessing. The tests validate every document the
test suite produces against these files (tests/report/test_schemas.py): a field added to
an output without its schema fails there. docs/contracts.md lists them.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

SUFFIX = ".schema.json"


def files() -> dict[str, str]:
    """Short name (``verdict``, ``tune.plan``) -> file name, for every shipped schema."""
    root = resources.files(__name__)
    found = sorted(p.name for p in root.iterdir() if p.name.endswith(SUFFIX))
    return {name[: -len(SUFFIX)]: name for name in found}


def text(name: str) -> str:
    """The schema's file as shipped (``name`` as ``resolve`` takes it)."""
    return (resources.files(__name__) / files()[resolve(name)]).read_text(encoding="utf-8")


def load(name: str) -> dict[str, Any]:
    """The schema as a mapping (``name`` as ``resolve`` takes it)."""
    doc: dict[str, Any] = json.loads(text(name))
    return doc


def resolve(name: str) -> str:
    """The short name of a schema from any spelling a user or a document gives:
    ``verdict``, ``dolmen.verdict``, ``dolmen.verdict/1``, ``verdict/1``; KeyError names the
    valid ones. A version other than the shipped one is refused: another version is another
    contract."""
    known = files()
    short = name.strip()
    version = None
    if "/" in short:
        short, version = short.rsplit("/", 1)
    short = short.removeprefix("dolmen.")
    if short not in known:
        raise KeyError(f"no schema {name!r}; valid: {', '.join(ids())}")
    if version is not None and schema_id(short) != f"dolmen.{short}/{version}":
        raise KeyError(f"no schema {name!r}; this dolmen ships {schema_id(short)}")
    return short


def schema_id(short: str) -> str:
    """The ``$id`` of a shipped schema (what the documents' ``schema`` key says)."""
    name = files()[short]
    doc = json.loads((resources.files(__name__) / name).read_text(encoding="utf-8"))
    return str(doc.get("$id", ""))


def ids() -> list[str]:
    """Every shipped schema's ``$id``, sorted."""
    return sorted(schema_id(short) for short in files())
