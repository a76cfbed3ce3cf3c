"""The on-disk spool of one export destination: a cursor and the batch in flight.

    <spool>/<destination id>/cursor    {"sequence": N, "hash": H}: delivered up to N
    <spool>/<destination id>/pending   {"first": a, "last": b, ...}\\n + the framed bytes

A batch is written to ``pending`` (fsync'd) before it is sent, and the cursor moves
(atomically, fsync'd) only once the batch is delivered; ``pending`` goes last. A
crash or a refused delivery at any point leaves either the batch to send again or
a cursor that already covers it: at least once, never zero times. The receiver
may see a batch twice; (host, sequence) in every record lets it drop the repeat.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from dolmen.fsutil import atomic_write


@dataclass(frozen=True)
class Pending:
    """A batch in flight: the sequences it holds and the exact bytes to deliver."""

    first: int
    last: int
    last_hash: str
    payload: bytes


@dataclass(frozen=True)
class Cursor:
    """The last event delivered (0 before the first delivery)."""

    sequence: int = 0
    hash: str = ""


def destination_id(destination: str, fmt: str) -> str:
    """A folder name for one (destination, format): readable, and unique by its hash."""
    readable = re.sub(r"[^A-Za-z0-9.-]+", "_", f"{fmt}-{destination}").strip("_")[:60]
    digest = hashlib.sha256(f"{fmt}\0{destination}".encode()).hexdigest()[:12]
    return f"{readable}-{digest}"


class Spool:
    """The spool folder of one destination and format."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @property
    def _cursor(self) -> Path:
        return self.folder / "cursor"

    @property
    def _pending(self) -> Path:
        return self.folder / "pending"

    def cursor(self) -> Cursor:
        """Where delivery stands; a missing cursor means nothing was delivered yet."""
        try:
            obj = json.loads(self._cursor.read_text(encoding="ascii"))
            return Cursor(int(obj["sequence"]), str(obj["hash"]))
        except FileNotFoundError:
            return Cursor()
        except (OSError, ValueError, KeyError, TypeError):
            # a damaged cursor: start over; duplicates are what de-duplication keys are for
            return Cursor()

    def pending(self) -> Pending | None:
        """The batch left in flight by an earlier export, if any."""
        try:
            data = self._pending.read_bytes()
        except FileNotFoundError:
            return None
        header, _, payload = data.partition(b"\n")
        try:
            obj = json.loads(header)
            p = Pending(int(obj["first"]), int(obj["last"]), str(obj["last_hash"]), payload)
        except (ValueError, KeyError, TypeError):
            return None  # torn while being written: it was never sent, so nothing is lost
        return p if len(payload) == int(obj.get("bytes", -1)) else None

    def stage(self, batch: Pending) -> None:
        """Write a batch durably before it is sent."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o750)
        header = {
            "first": batch.first,
            "last": batch.last,
            "last_hash": batch.last_hash,
            "bytes": len(batch.payload),
        }
        atomic_write(self._pending, json.dumps(header).encode() + b"\n" + batch.payload, mode=0o640)

    def commit(self, batch: Pending) -> None:
        """Record ``batch`` as delivered: move the cursor, then drop the batch."""
        cursor = {"sequence": batch.last, "hash": batch.last_hash}
        atomic_write(self._cursor, json.dumps(cursor).encode(), mode=0o640)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._pending)
