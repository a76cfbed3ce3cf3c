"""Reading and validating the knowledge base's TOML data files.

Each data file holds arrays of tables (``[[toolkit]]``, ``[[gpu]]``...). Every
row names where its figures come from (``source``) and says whether they were
checked against that source (``verified``; rows the research notes mark as
recalled carry ``verified = false`` and list the doubtful fields in
``unverified``). A row with an unknown key, a missing required key or a value
of the wrong type stops the load with one line naming the file and the row:
a typo in a data file must not silently drop a figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dolmen.errors import InputError
from dolmen.frozen import frozen

# Keys every row may carry, whatever its table.
COMMON_KEYS: Mapping[str, tuple[type | tuple[type, ...], bool]] = {
    "source": (str, True),
    "verified": (bool, False),
    "unverified": (list, False),
    "note": (str, False),
}


class KbDataError(InputError):
    """A knowledge-base data file is malformed (a bug in dolmen's package data)."""


@frozen
class Field:
    """One allowed key of a row: its type(s) and whether the row must have it."""

    types: type | tuple[type, ...]
    required: bool = False


def read_tables(
    filename: str, schema: Mapping[str, Mapping[str, Field]], *, text: str | None = None
) -> dict[str, list[dict[str, Any]]]:
    """The validated rows of ``kb/data/<filename>``, table name -> rows.

    ``schema`` maps each array-of-tables name to its fields (``COMMON_KEYS``
    are added). ``text`` replaces the packaged file (tests feed broken files).
    Raises ``KbDataError`` naming the file and the row on any problem.
    """
    # Imported here: a run reads the prebuilt tables (kb/prebuilt.py) and never parses TOML.
    from importlib import resources

    from dolmen.compat import tomllib

    if text is None:
        try:
            text = (resources.files("dolmen.kb") / "data" / filename).read_text("utf-8")
        except OSError as e:
            raise KbDataError(f"cannot read knowledge-base file ({e})", path=filename) from e
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise KbDataError(f"not valid TOML ({e})", path=filename) from e
    unknown_tables = sorted(set(doc) - set(schema))
    if unknown_tables:
        raise KbDataError(
            f"unknown table {unknown_tables[0]!r}; valid tables: {', '.join(schema)}",
            path=filename,
        )
    out: dict[str, list[dict[str, Any]]] = {}
    for table, fields in schema.items():
        rows = doc.get(table, [])
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise KbDataError(f"{table!r} must be an array of tables ([[{table}]])", path=filename)
        for i, row in enumerate(rows, start=1):
            _check_row(filename, table, i, row, fields)
        out[table] = rows
    return out


def _check_row(
    filename: str, table: str, index: int, row: Mapping[str, Any], fields: Mapping[str, Field]
) -> None:
    where = f"[[{table}]] row {index}{_label(row)}"
    allowed = {**{k: Field(t, r) for k, (t, r) in COMMON_KEYS.items()}, **fields}
    for key, value in row.items():
        spec = allowed.get(key)
        if spec is None:
            raise KbDataError(
                f"{where}: unknown key {key!r}; valid keys: {', '.join(sorted(allowed))}",
                path=filename,
            )
        if isinstance(value, bool) and spec.types not in (bool, (bool,)):
            raise KbDataError(f"{where}: {key!r} must not be a boolean", path=filename)
        if not isinstance(value, spec.types):
            raise KbDataError(
                f"{where}: {key!r} has the wrong type ({type(value).__name__})", path=filename
            )
    for key, spec in allowed.items():
        if spec.required and key not in row:
            what = "no source" if key == "source" else f"no {key!r}"
            raise KbDataError(f"{where}: has {what}", path=filename)
    if not str(row["source"]).strip():
        raise KbDataError(f"{where}: has an empty source", path=filename)
    doubtful = row.get("unverified", [])
    if not all(isinstance(d, str) and d in allowed for d in doubtful):
        raise KbDataError(f"{where}: 'unverified' must list keys of this row", path=filename)
    if doubtful and row.get("verified", True):
        raise KbDataError(
            f"{where}: lists unverified fields but does not say verified = false", path=filename
        )


def _label(row: Mapping[str, Any]) -> str:
    for key in ("id", "versions", "releases", "major", "name"):
        if key in row:
            return f" ({key}={row[key]!r})"
    return ""
