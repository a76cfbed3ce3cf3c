"""The agent's verdict history: SQLite in WAL mode in the state folder (``serve/agent.db``).

WAL lets the API read while the agent writes, and a crash loses at most the run being
written: history survives restarts. Each row keeps the validate JSON verbatim (what
``GET /v1/verdict/latest`` serves, byte for byte) and the Prometheus text of that run
(``/metrics`` before the first run after a restart). A write that fails (a full disk, a
read-only file system, a corrupt file) puts the store in read-only degraded mode: the
agent keeps serving its latest verdict from memory, ``/readyz`` says 503 with the
reason, and every later run tries to write again (the disk may have been freed).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started TEXT NOT NULL,
    finished REAL NOT NULL,
    level TEXT NOT NULL,
    status TEXT NOT NULL,
    exit_code INTEGER NOT NULL,
    duration_s REAL NOT NULL,
    counts TEXT NOT NULL,
    verdict TEXT NOT NULL,
    prometheus TEXT NOT NULL
);
"""
SUMMARY = "id, started, finished, level, status, exit_code, duration_s, counts"


@dataclass(frozen=True)
class Run:
    """One stored run: its summary, and (when asked for) its JSON and metrics."""

    id: int
    started: str
    finished: float
    level: str
    status: str
    exit_code: int
    duration_s: float
    counts: dict[str, int]
    verdict: str = ""
    prometheus: str = ""

    def summary(self) -> dict[str, Any]:
        """The row as ``GET /v1/verdicts`` lists it."""
        return {
            "id": self.id,
            "started": self.started,
            "finished": _iso(self.finished),
            "level": self.level,
            "status": self.status,
            "exit_code": self.exit_code,
            "duration_s": self.duration_s,
            "counts": self.counts,
        }


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


class Store:
    """The history file; ``degraded`` is None, or why it is read-only now."""

    def __init__(self, path: Path, *, max_pages: int | None = None) -> None:
        self.path = path
        self.degraded: str | None = None
        self._lock = threading.Lock()
        self._max_pages = max_pages  # tests: SQLITE_FULL, as a full disk gives it
        self._db: sqlite3.Connection | None = None
        self._open()

    def _open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o750)
            db = sqlite3.connect(self.path, check_same_thread=False, timeout=5.0)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # WAL: durable at checkpoints, never torn
            db.executescript(SCHEMA_SQL)
            if self._max_pages:
                db.execute(f"PRAGMA max_page_count={int(self._max_pages)}")
            self._db = db
        except (sqlite3.Error, OSError) as e:
            self.degraded = f"state store {self.path} cannot be opened for writing: {e}"
            self._db = self._read_only()

    def _read_only(self) -> sqlite3.Connection | None:
        try:
            uri = f"file:{self.path}?mode=ro"
            return sqlite3.connect(uri, uri=True, check_same_thread=False)
        except sqlite3.Error:
            return None

    def add(self, doc: dict[str, Any], verdict_json: str, prometheus: str) -> int | None:
        """Store one run; its id, or None when it could not be written (degraded)."""
        if self._db is None:
            return None
        row = (
            doc["started"],
            time.time(),
            doc["level"],
            doc["status"],
            int(doc["exit_code"]),
            float(doc["duration_s"]),
            json.dumps(doc["counts"]),
            verdict_json,
            prometheus,
        )
        with self._lock:
            try:
                with self._db:
                    cur = self._db.execute(
                        "INSERT INTO runs (started, finished, level, status, exit_code,"
                        " duration_s, counts, verdict, prometheus) VALUES (?,?,?,?,?,?,?,?,?)",
                        row,
                    )
            except (sqlite3.Error, OSError) as e:
                self.degraded = f"state store {self.path} is read-only now: {_why(e)}"
                return None
        self.degraded = None
        return cur.lastrowid

    def latest(self) -> Run | None:
        """The newest run, with its JSON and metrics."""
        rows = self._query(
            f"SELECT {SUMMARY}, verdict, prometheus FROM runs ORDER BY id DESC LIMIT 1"
        )
        return _run(rows[0]) if rows else None

    def get(self, run_id: int) -> Run | None:
        """One run by id, with its JSON and metrics."""
        rows = self._query(
            f"SELECT {SUMMARY}, verdict, prometheus FROM runs WHERE id = ?", (run_id,)
        )
        return _run(rows[0]) if rows else None

    def page(self, limit: int, before: int | None = None) -> list[Run]:
        """Summaries, newest first, of runs older than ``before`` (an id)."""
        if before is None:
            rows = self._query(f"SELECT {SUMMARY} FROM runs ORDER BY id DESC LIMIT ?", (limit,))
        else:
            rows = self._query(
                f"SELECT {SUMMARY} FROM runs WHERE id < ? ORDER BY id DESC LIMIT ?",
                (before, limit),
            )
        return [_run(r) for r in rows]

    def count(self) -> int:
        """How many runs the history holds."""
        rows = self._query("SELECT COUNT(*) FROM runs")
        return int(rows[0][0]) if rows else 0

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self._db is None:
            return []
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.Error:
                return []  # a missing table in a read-only copy: no history

    def close(self) -> None:
        """Close the file (the WAL is checkpointed into it)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def _why(e: Exception) -> str:
    text = str(e)
    return "the disk is full" if "full" in text.lower() else text


def _run(row: tuple[Any, ...]) -> Run:
    counts = json.loads(row[7]) if row[7] else {}
    extra = row[8:10] if len(row) > 8 else ("", "")
    return Run(row[0], row[1], row[2], row[3], row[4], row[5], row[6], counts, *extra)
