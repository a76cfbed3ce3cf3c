"""The ``dolmen.bench/1`` document: built from workload results, written as JSON, read back.

One JSON Schema (``report/schemas/bench.schema.json``) is the contract, for other tools
and for dolmen itself: ``load_bench`` holds a file to it with ``schema_errors``, a small
validator of the keywords that schema uses (type, const, enum, required, properties,
additionalProperties, items, minimum, ``$ref`` into ``$defs``), so a file that
``--compare`` or ``--baseline`` reads is refused with the first wrong field named, and
the plots and the terminal view never meet a string where a number should be. The
tests check that this validator and the ``jsonschema`` package agree.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from dolmen.errors import InputError
from dolmen.fsutil import read_regular

SCHEMA = "dolmen.bench/1"
MAX_BENCH_BYTES = 64 << 20  # an 8-GPU run is tens of KiB (clock samples included)
_HINT = "give a JSON file written by `dolmen bench` (its bench.json)"


def bench_document(
    *,
    host: str,
    started: str,
    device: str,
    wall_s: float,
    results: Mapping[str, Mapping[str, Any]],
    errors: Mapping[str, str],
    smoke: bool = False,
    version: str = "",
) -> dict[str, Any]:
    """The document of one run. A result holding a non-finite number (a workload's bug:
    JSON has no NaN) moves to ``errors`` with that said, rather than writing invalid JSON."""
    kept: dict[str, Any] = {}
    failed = dict(errors)
    for name, body in results.items():
        bad = next(_non_finite(body, name), None)
        if bad is None:
            kept[name] = dict(body)
        else:
            failed[name] = f"result not recorded: {bad} is not a finite number"
    doc: dict[str, Any] = {"schema": SCHEMA}
    if version:
        doc["dolmen_version"] = version
    doc.update(
        host=host,
        started=started,
        device=device,
        smoke=smoke,
        wall_s=round(wall_s, 3),
        results=kept,
        errors=failed,
    )
    return doc


def dump_bench(doc: Mapping[str, Any]) -> bytes:
    """The document as the bytes of bench.json."""
    return (json.dumps(doc, indent=2, allow_nan=False) + "\n").encode()


def load_bench(path: str | Path) -> dict[str, Any]:
    """A ``dolmen.bench/1`` file, read and held to the schema; InputError (exit 2) names
    the first thing wrong in one line."""
    p = Path(path)
    try:
        text = read_regular(p, MAX_BENCH_BYTES).decode("utf-8")
        doc = json.loads(text, parse_constant=_no_constant)
    except FileNotFoundError:
        raise InputError("no such file", path=str(p), hint=_HINT) from None
    except OSError as e:
        why = e.strerror or str(e)
        raise InputError(f"not a readable bench result ({why})", path=str(p), hint=_HINT) from None
    except (UnicodeDecodeError, ValueError) as e:
        raise InputError(f"not JSON ({e})", path=str(p), hint=_HINT) from None
    return checked(doc, str(p))


def checked(doc: Any, where: str) -> dict[str, Any]:
    """``doc`` when it is a valid ``dolmen.bench/1`` document; InputError otherwise."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise InputError(f"not a {SCHEMA} document (schema: {got!r})", path=where, hint=_HINT)
    problems = schema_errors(doc)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InputError(f"malformed {SCHEMA}: {problems[0]}{more}", path=where, hint=_HINT)
    return doc


@cache
def bench_schema() -> dict[str, Any]:
    """The JSON Schema of ``dolmen.bench/1`` (shipped as package data)."""
    from dolmen.report import schemas

    return schemas.load("bench")


def schema_errors(doc: Any) -> list[str]:
    """Every place ``doc`` breaks the schema, as ``path: what`` (empty when valid)."""
    root = bench_schema()
    return list(_validate(doc, root, "$", root))


def _validate(
    value: Any, schema: Mapping[str, Any], at: str, root: Mapping[str, Any]
) -> Iterator[str]:
    ref = schema.get("$ref")
    if ref is not None:
        schema = root["$defs"][ref.rpartition("/")[2]]
    if "const" in schema and value != schema["const"]:
        yield f"{at}: {value!r} is not {schema['const']!r}"
        return
    if "enum" in schema and value not in schema["enum"]:
        yield f"{at}: {value!r} is not one of {', '.join(map(repr, schema['enum']))}"
        return
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is(value, k) for k in kinds):
            yield f"{at}: {_kind(value)}, not {' or '.join(kinds)}"
            return
    if "minimum" in schema and _is(value, "number") and value < schema["minimum"]:
        yield f"{at}: {value!r} is below {schema['minimum']}"
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                yield f"{at}: {name!r} is missing"
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in props:
                yield from _validate(item, props[name], f"{at}.{name}", root)
            elif extra is False:
                yield f"{at}: unexpected field {name!r}"
            elif isinstance(extra, dict):
                yield from _validate(item, extra, f"{at}.{name}", root)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            yield from _validate(item, schema["items"], f"{at}[{i}]", root)


def _is(value: Any, kind: str) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False  # JSON's true is not a number (Python's bool is an int)
    if kind == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if kind == "number":
        return isinstance(value, int | float)
    return isinstance(value, {"string": str, "object": dict, "array": list}[kind])


def _kind(value: Any) -> str:
    names = {bool: "a boolean", str: "a string", dict: "an object", list: "an array"}
    if value is None:
        return "null"
    return names.get(type(value), "a number" if isinstance(value, int | float) else "a value")


def _no_constant(name: str) -> Any:
    # Python's json reads NaN and Infinity, which are not JSON: refused like any junk.
    raise ValueError(f"{name} is not JSON")


def _non_finite(value: Any, at: str) -> Iterator[str]:
    if isinstance(value, float) and not math.isfinite(value):
        yield at
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _non_finite(v, f"{at}.{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _non_finite(v, f"{at}[{i}]")
