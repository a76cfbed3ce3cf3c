"""How a journal line is written and read back: JSON, a sequence number, a checksum chain.

Format 2 (written since issue 9): the begin line carries ``"format": 2``; every line
carries ``seq`` (0, 1, 2...) and ``sum``, the first 16 hex digits of SHA-256 over the
previous line's ``sum`` and this line's JSON without ``sum`` (keys sorted). A changed
byte breaks a line's JSON or its sum; a line lost from the middle, repeated or moved
breaks ``seq`` or the chain.

Format 1 (journals written before: no ``format`` and no ``sum`` on the begin line) is
still read, and appended to in format 1, so an apply interrupted under an older dolmen
can be recovered: its lines are held to everything but the sums.

Only the last line may be torn, and only as a power loss tears it: no newline, and not a
whole record (a record whose newline is missing was written, so its action may have
run). Everything else is refused with the file and the line (InputError, exit 2):
dolmen never guesses which records a damaged journal held.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dolmen.errors import EnvironmentProblem, InputError
from dolmen.fsutil import NotRegularFile, TooLarge, read_regular

FORMAT = 2
MAX_BYTES = 64 << 20  # a journal of thousands of steps is a few MiB
_HINT = (
    "the journal is damaged: dolmen will not guess what it held; check the host by hand "
    "(`dolmen tune plan`), then move the file out of the journals folder"
)


def line_sum(prev: str, record: Mapping[str, Any]) -> str:
    """The chained checksum of one record (without its ``sum``)."""
    body = json.dumps({k: v for k, v in record.items() if k != "sum"}, sort_keys=True)
    return hashlib.sha256((prev + body).encode()).hexdigest()[:16]


def encode(record: Mapping[str, Any], prev: str, fmt: int) -> tuple[bytes, str]:
    """One journal line (newline included) and the sum the next line chains on."""
    rec = dict(record)
    rec.pop("sum", None)
    if fmt >= 2:
        rec["sum"] = line_sum(prev, rec)
    return json.dumps(rec, sort_keys=True).encode() + b"\n", str(rec.get("sum", ""))


@dataclass(frozen=True)
class Decoded:
    """The records of a journal file, its format, and where the next line goes."""

    records: list[dict[str, Any]]
    fmt: int
    good_bytes: int  # the file's length without a torn last line
    last_sum: str


def damaged(path: Path, line: int, why: str) -> InputError:
    """The one error for a journal that cannot be trusted, at ``path:line``."""
    return InputError(f"tune journal damaged: {why}", path=str(path), line=line, hint=_HINT)


def decode(path: Path) -> Decoded:
    """Every record of ``path``, checked line by line (module docstring)."""
    try:
        data = read_regular(path, MAX_BYTES)  # a FIFO planted among journals would block
    except (NotRegularFile, TooLarge, IsADirectoryError) as e:
        raise damaged(path, 1, str(e.strerror)) from None
    except OSError as e:
        raise EnvironmentProblem(
            f"cannot read the tune journal {path}: {e.strerror or e}",
            hint="dolmen's state is root's: run it with sudo",
        ) from None
    *whole, tail = data.split(b"\n")
    if tail:
        _torn_or_damaged(path, len(whole) + 1, tail)
    if not whole:
        why = "empty file" if not data else "no complete begin record"
        raise damaged(path, 1, f"{why} (a journal is created whole, with its begin line)")
    records: list[dict[str, Any]] = []
    fmt, prev = 1, ""
    for n, raw in enumerate(whole):
        try:
            rec = json.loads(raw)
        except ValueError as e:  # UnicodeDecodeError is one
            raise damaged(path, n + 1, f"not a JSON record ({e})") from None
        if not isinstance(rec, dict):
            raise damaged(path, n + 1, "not a JSON object")
        if n == 0:
            fmt = _format(path, rec)
        seq = rec.get("seq")
        if type(seq) is not int or seq != n:
            raise damaged(path, n + 1, f"sequence number {seq!r} where {n} belongs")
        if fmt >= 2:
            if rec.get("sum") != line_sum(prev, rec):
                raise damaged(path, n + 1, "checksum does not match (changed, moved or spliced)")
            prev = str(rec["sum"])
        elif "sum" in rec:
            raise damaged(path, n + 1, "a checksum in a format 1 journal")
        records.append(rec)
    return Decoded(records, fmt, len(data) - len(tail), prev)


def _format(path: Path, begin: Mapping[str, Any]) -> int:
    if "format" not in begin and "sum" not in begin:
        return 1  # written before checksums: see the module docstring
    fmt = begin.get("format")
    if fmt != FORMAT or type(fmt) is not int:
        raise damaged(path, 1, f"journal format {fmt!r}; this dolmen reads 1 and {FORMAT}")
    return FORMAT


def _torn_or_damaged(path: Path, line: int, tail: bytes) -> None:
    """Accept an unterminated last line only when it is a prefix of a record."""
    if not tail.startswith(b"{"):
        raise damaged(path, line, "the last line has no newline and is not a record's start")
    try:
        # Decoded leniently: a flipped newline can be any byte, and the record before it
        # is still whole (the writer's JSON is ASCII, so a real tear never splits a char).
        json.JSONDecoder().raw_decode(tail.decode("utf-8", "replace"))
    except ValueError:
        return  # torn: the action it announced had not started (journal.py)
    raise damaged(path, line, "the last record is whole but its newline is missing")
