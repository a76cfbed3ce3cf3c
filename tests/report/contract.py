"""``assert_valid(doc)``: a ``--json`` document against the JSON Schema its ``schema`` key
names (src/dolmen/report/schemas), with the ``jsonschema`` package (the ``test`` extra)."""

from __future__ import annotations

from functools import cache
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

from dolmen.report import schemas


@cache
def validator(schema_id: str) -> Draft202012Validator:
    """The validator of one shipped schema (checked as a draft 2020-12 schema first)."""
    schema = schemas.load(schema_id)
    Draft202012Validator.check_schema(schema)
    assert schema["$id"] == schema_id, (schema["$id"], schema_id)
    return Draft202012Validator(schema, format_checker=FormatChecker())


def assert_valid(doc: Any) -> Any:
    """``doc`` unchanged when it has a ``schema`` key and its schema holds; every error
    (path and message) in the assertion otherwise."""
    assert isinstance(doc, dict) and isinstance(doc.get("schema"), str), "no schema key"
    errors = sorted(validator(doc["schema"]).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, [f"{'/'.join(map(str, e.path))}: {e.message[:200]}" for e in errors[:10]]
    return doc
