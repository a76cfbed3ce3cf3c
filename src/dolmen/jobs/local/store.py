"""The local backend's state: jobs, their ranks and events, users and quotas, in SQLite.

One file, ``<state dir>/jobs/jobs.db``, in WAL mode so the CLI reads while a
supervisor writes; every write is one ``BEGIN IMMEDIATE`` transaction (one writer
at a time, the others wait up to ``BUSY_TIMEOUT_S``). Per-job files (rank logs,
the supervisor's own log) live in ``<state dir>/jobs/<id>/``.

The database is the only record of ids, users and quotas: a missing or empty
``jobs.db`` beside existing job folders is refused, not silently recreated (the
quotas would vanish and job 1's logs would be appended to the old job 1's), and a
new job never takes a folder that exists (ids are numbered after the folders).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dolmen.errors import EnvironmentProblem, UsageError
from dolmen.jobs.backend import JobState
from dolmen.jobs.kubernetes.options import PodOptions
from dolmen.jobs.spec import JobSpec
from dolmen.paths import state_dir

BUSY_TIMEOUT_S = 30.0
ACTIVE = (JobState.PENDING, JobState.RUNNING, JobState.RESTARTING)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    user TEXT NOT NULL,
    spec TEXT NOT NULL,
    options TEXT NOT NULL DEFAULT '{}',
    state TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    restarts INTEGER NOT NULL DEFAULT 0,
    nodes INTEGER NOT NULL,
    gpus TEXT NOT NULL DEFAULT '[]',
    excluded TEXT NOT NULL DEFAULT '{}',
    supervisor_pid INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS ranks (
    job_id INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    node INTEGER NOT NULL,
    local_rank INTEGER NOT NULL,
    gpus TEXT NOT NULL,
    pid INTEGER,
    exit_code INTEGER,
    attempt INTEGER NOT NULL,
    PRIMARY KEY (job_id, rank)
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id INTEGER NOT NULL,
    time REAL NOT NULL,
    kind TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS users (name TEXT PRIMARY KEY, groups TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS quotas (
    kind TEXT NOT NULL, name TEXT NOT NULL, gpus INTEGER NOT NULL, PRIMARY KEY (kind, name)
);
"""


@dataclass(frozen=True)
class JobRow:
    """One local job as stored."""

    id: int
    spec: JobSpec
    user: str
    state: JobState
    reason: str
    restarts: int
    nodes: int  # nodes of the current attempt (fewer than asked after an elastic restart)
    gpus: tuple[int, ...]  # GPUs held now
    excluded: Mapping[int, str]  # GPUs found unhealthy while this job used them -> why
    supervisor_pid: int | None
    cancel_requested: bool
    created: float
    updated: float
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RankRow:
    """One rank of the current attempt."""

    rank: int
    node: int
    local_rank: int
    gpus: tuple[int, ...]
    pid: int | None
    exit_code: int | None
    attempt: int


@dataclass(frozen=True)
class Event:
    """A line of a job's history (submitted, allocated, fault, restart, ...)."""

    time: float
    kind: str
    message: str


def jobs_dir(base: Path | None = None) -> Path:
    """``<state dir>/jobs``."""
    return (base or state_dir()) / "jobs"


def spec_to_json(spec: JobSpec) -> str:
    """A JobSpec as JSON (stored with the job, handed to the supervisor)."""
    return json.dumps(asdict(spec), sort_keys=True)


def spec_from_json(text: str) -> JobSpec:
    """The inverse of ``spec_to_json``."""
    d = json.loads(text)
    d["command"] = tuple(d["command"])
    d["exclude_nodes"] = tuple(d.get("exclude_nodes", ()))
    d["env"] = dict(d.get("env", {}))
    d["slurm_extra"] = tuple(d.get("slurm_extra", ()))
    pod = dict(d.get("kubernetes") or {})
    for key in ("networks", "tolerations"):
        pod[key] = tuple(pod.get(key, ()))
    d["kubernetes"] = PodOptions(**pod)
    return JobSpec(**d)


class JobStore:
    """The SQLite store (module docstring). Cheap to open; one per process."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = jobs_dir(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self.path = self.root / "jobs.db"
            self._refuse_lost_database()
            self._db = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            with self.write() as db:
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        db.execute(stmt)
        except (OSError, sqlite3.Error) as e:
            raise EnvironmentProblem(
                f"cannot open the job store in {self.root}: {e}",
                hint="set DOLMEN_STATE_DIR to a folder you can write, or run as root",
            ) from e

    def _refuse_lost_database(self) -> None:
        """EnvironmentProblem when jobs.db is missing or empty while job folders exist."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            size = 0
        if size:
            return
        folders = self._job_folders()
        if not folders:
            return
        raise EnvironmentProblem(
            f"the job store {self.path} is {'empty' if self.path.exists() else 'missing'}"
            f" but {len(folders)} job folders exist (up to {self.root / str(max(folders))}):"
            " refusing to start a new store over them",
            hint="restore jobs.db from a backup, or move the numbered job folders away",
        )

    def _job_folders(self) -> list[int]:
        return [int(p.name) for p in self.root.iterdir() if p.name.isdigit() and p.is_dir()]

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (BEGIN IMMEDIATE) so writers queue.
        A write the disk refuses (full, read-only) is an EnvironmentProblem (exit 3)."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.Error as e:
            if self._db.in_transaction:
                with suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
            raise EnvironmentProblem(
                f"cannot write the job store {self.root / 'jobs.db'}: {e}",
                hint="free space on the state folder's disk, or fix its permissions",
            ) from e

    def job_dir(self, job_id: int) -> Path:
        """``<state dir>/jobs/<id>``: rank logs and the supervisor's log."""
        return self.root / str(job_id)

    # --- jobs ----------------------------------------------------------------------
    def create(
        self,
        spec: JobSpec,
        user: str,
        options: Mapping[str, Any],
        *,
        before: Callable[[], object] | None = None,
    ) -> int:
        """Store a new pending job and return its id, in one write transaction with
        ``before()`` (the quota check, so two submissions cannot both slip under a limit):
        its raising stores nothing."""
        now = time.time()
        with self.write() as db:
            if before is not None:
                before()
            # Number after every folder there is: a log folder is never reused.
            row = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'jobs'").fetchone()
            next_id = max([int(row[0]) if row else 0, *self._job_folders()]) + 1
            cur = db.execute(
                "INSERT INTO jobs (id, name, user, spec, options, state, nodes, created, updated)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    next_id,
                    spec.name,
                    user,
                    spec_to_json(spec),
                    json.dumps(dict(options)),
                    JobState.PENDING.value,
                    spec.nodes,
                    now,
                    now,
                ),
            )
            job_id = int(cur.lastrowid or 0)
            self._event(db, job_id, "submitted", f"{spec.world_size} ranks by {user}")
            try:  # inside the transaction: no job without its own, new folder
                self.job_dir(job_id).mkdir(parents=True, exist_ok=False)
            except OSError as e:
                raise EnvironmentProblem(
                    f"cannot create the job folder {self.job_dir(job_id)}: {e.strerror or e}",
                    hint="free space on the state folder's disk, or fix its permissions",
                ) from e
        return job_id

    def get(self, job_id: int | str) -> JobRow:
        """The job; UsageError for an unknown id."""
        jid = _job_id(job_id)
        row = self._db.execute("SELECT * FROM jobs WHERE id = ?", (jid,)).fetchone()
        if row is None:
            raise UsageError(f"no local job {job_id}", hint="`dolmen jobs list` shows the jobs")
        return _job(row, self._columns("jobs"))

    def jobs(self) -> list[JobRow]:
        """Every job, newest first."""
        rows = self._db.execute("SELECT * FROM jobs ORDER BY id DESC").fetchall()
        cols = self._columns("jobs")
        return [_job(r, cols) for r in rows]

    def update(self, job_id: int, **fields: Any) -> None:
        """Set columns of a job (state, reason, restarts, nodes, gpus, excluded, ...)."""
        cols = dict(fields)
        for key in ("gpus", "excluded"):
            if key in cols:
                value = cols[key]
                cols[key] = json.dumps(
                    {str(k): v for k, v in value.items()}
                    if isinstance(value, Mapping)
                    else list(value)
                )
        if "state" in cols:
            cols["state"] = JobState(cols["state"]).value
        cols["updated"] = time.time()
        sets = ", ".join(f"{k} = ?" for k in cols)
        with self.write() as db:
            db.execute(f"UPDATE jobs SET {sets} WHERE id = ?", (*cols.values(), job_id))

    def request_cancel(self, job_id: int) -> None:
        """Ask the supervisor to stop the job (it polls this flag)."""
        self.update(job_id, cancel_requested=1)

    def gpus_in_use(self, *, besides: int | None = None) -> dict[int, int]:
        """GPU -> job id, for the GPUs active jobs hold (other than ``besides``)."""
        held: dict[int, int] = {}
        for job in self.jobs():
            if job.state in ACTIVE and job.id != besides:
                for g in job.gpus:
                    held[g] = job.id
        return held

    def claim(
        self, job_id: int, choose: Callable[[Mapping[int, int]], Sequence[int] | None]
    ) -> Sequence[int] | None:
        """Give ``job_id`` the GPUs ``choose(busy)`` picks, in one write transaction, so two
        supervisors never take the same GPU; None (nothing taken) when it picks none."""
        with self.write():
            gpus = choose(self.gpus_in_use(besides=job_id))
            if gpus is not None:
                self._db.execute(
                    "UPDATE jobs SET gpus = ?, updated = ? WHERE id = ?",
                    (json.dumps(list(gpus)), time.time(), job_id),
                )
        return gpus

    # --- ranks and events ------------------------------------------------------------
    def set_ranks(self, job_id: int, ranks: Sequence[RankRow]) -> None:
        """Replace the job's ranks with those of the current attempt."""
        with self.write() as db:
            db.execute("DELETE FROM ranks WHERE job_id = ?", (job_id,))
            db.executemany(
                "INSERT INTO ranks VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        job_id,
                        r.rank,
                        r.node,
                        r.local_rank,
                        json.dumps(list(r.gpus)),
                        r.pid,
                        r.exit_code,
                        r.attempt,
                    )
                    for r in ranks
                ],
            )

    def ranks(self, job_id: int) -> list[RankRow]:
        """The ranks of the current (or last) attempt."""
        rows = self._db.execute(
            "SELECT rank, node, local_rank, gpus, pid, exit_code, attempt FROM ranks"
            " WHERE job_id = ? ORDER BY rank",
            (job_id,),
        ).fetchall()
        return [RankRow(r[0], r[1], r[2], tuple(json.loads(r[3])), r[4], r[5], r[6]) for r in rows]

    def event(self, job_id: int, kind: str, message: str) -> None:
        """Append to the job's history."""
        with self.write() as db:
            self._event(db, job_id, kind, message)

    def events(self, job_id: int) -> list[Event]:
        """The job's history, oldest first."""
        rows = self._db.execute(
            "SELECT time, kind, message FROM events WHERE job_id = ? ORDER BY id", (job_id,)
        ).fetchall()
        return [Event(*r) for r in rows]

    @staticmethod
    def _event(db: sqlite3.Connection, job_id: int, kind: str, message: str) -> None:
        db.execute(
            "INSERT INTO events (job_id, time, kind, message) VALUES (?, ?, ?, ?)",
            (job_id, time.time(), kind, message),
        )

    def _columns(self, table: str) -> list[str]:
        return [r[1] for r in self._db.execute(f"PRAGMA table_info({table})")]

    @property
    def db(self) -> sqlite3.Connection:
        """The connection, for the account tables (``accounts.LocalQuotaStore``)."""
        return self._db


def _job_id(job_id: int | str) -> int:
    text = str(job_id).strip()
    if not text.isdigit():
        raise UsageError(f"{job_id!r} is not a local job id (a number)")
    return int(text)


def _job(row: Sequence[Any], cols: list[str]) -> JobRow:
    d = dict(zip(cols, row))
    return JobRow(
        id=d["id"],
        spec=spec_from_json(d["spec"]),
        user=d["user"],
        state=JobState(d["state"]),
        reason=d["reason"],
        restarts=d["restarts"],
        nodes=d["nodes"],
        gpus=tuple(json.loads(d["gpus"])),
        excluded={int(k): str(v) for k, v in json.loads(d["excluded"]).items()},
        supervisor_pid=d["supervisor_pid"],
        cancel_requested=bool(d["cancel_requested"]),
        created=d["created"],
        updated=d["updated"],
        options=json.loads(d["options"]),
    )
