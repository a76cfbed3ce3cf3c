"""The storage workload through fio: the command line and a pure parser of its JSON.

One fio run holds the four phases as jobs in sequence (``--stonewall``): a sequential
write that lays out the whole file (so that no read meets a hole, which reads as zeros
at no cost), then time-limited sequential read, random read and random write. Direct I/O
(``--direct=1``), libaio; sequential in 1 MiB blocks at queue depth 4 (the built-in
engine's four threads), random in 4 KiB blocks at depth 32 (fio's usual IOPS setting).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import field
from typing import Any

from dolmen.frozen import frozen

PHASES = ("seq_write", "seq_read", "rand_read", "rand_write")
SEQ_BLOCK = 1 << 20
RAND_BLOCK = 4096
SEQ_DEPTH = 4
RAND_DEPTH = 32
_JOBS = {
    "seq_write": ("write", "1M", SEQ_DEPTH, False),
    "seq_read": ("read", "1M", SEQ_DEPTH, True),
    "rand_read": ("randread", "4k", RAND_DEPTH, True),
    "rand_write": ("randwrite", "4k", RAND_DEPTH, True),
}


def fio_argv(
    path: str,
    file_bytes: int,
    phase_s: float,
    *,
    direct: bool = True,
    phases: tuple[str, ...] = PHASES,
) -> list[str]:
    """The fio command of ``phases`` on ``path`` (a file fio creates; the caller removes it).

    Buffered (``direct=False``: a file system that refuses O_DIRECT) adds fio's
    ``invalidate=1`` (drop the file's cached pages before each job) and ``end_fsync=1``.
    """
    argv = [
        "fio",
        "--output-format=json",
        f"--filename={path.replace(':', chr(92) + ':')}",  # fio splits file lists at ':'
        f"--size={file_bytes}",
        f"--direct={1 if direct else 0}",
        "--ioengine=libaio",
        "--randrepeat=0",
        "--fallocate=none",  # a preallocated extent reads as zeros from metadata
    ]
    if not direct:
        argv += ["--invalidate=1", "--end_fsync=1"]
    runtime = max(1, round(phase_s))
    for i, name in enumerate(phases):
        rw, bs, depth, timed = _JOBS[name]
        argv += [f"--name={name}", f"--rw={rw}", f"--bs={bs}", f"--iodepth={depth}"]
        if i:
            argv.append("--stonewall")
        if timed:
            argv += ["--time_based", f"--runtime={runtime}"]
    return argv


@frozen
class FioJob:
    """One job of fio's report: its error number and both directions' rates."""

    name: str
    error: int
    read_bytes_s: float
    read_iops: float
    write_bytes_s: float
    write_iops: float


@frozen
class FioReport:
    """fio's JSON, job by job; ``problem`` says why nothing usable came out (then empty)."""

    version: str | None = None
    jobs: Mapping[str, FioJob] = field(default_factory=dict)
    problem: str | None = None


def parse_fio_json(text: str) -> FioReport:
    """fio's ``--output-format=json`` output; never raises (bad input -> ``problem``).

    fio may print warnings before the document ("fio: ..."), so the JSON starts at the
    first ``{``. A job fio could not run has a non-zero ``error`` (an errno).
    """
    start = text.find("{")
    if start < 0:
        return FioReport(jobs={}, problem="malformed: no JSON in fio's output")
    try:
        doc = json.loads(text[start:])
    except ValueError as e:
        return FioReport(jobs={}, problem=f"malformed: fio's JSON is not complete ({e})")
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        return FioReport(jobs={}, problem="malformed: no 'jobs' list in fio's JSON")
    version = doc.get("fio version") if isinstance(doc.get("fio version"), str) else None
    jobs: dict[str, FioJob] = {}
    for raw in doc["jobs"]:
        job = _job(raw)
        if job is not None:
            jobs[job.name] = job
    if not jobs:
        return FioReport(version, {}, "malformed: fio's JSON holds no job")
    return FioReport(version, jobs, None)


def _job(raw: object) -> FioJob | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("jobname"), str):
        return None
    error = raw.get("error")
    read, write = raw.get("read"), raw.get("write")
    if not isinstance(error, int) or not isinstance(read, dict) or not isinstance(write, dict):
        return None
    numbers = [_num(d.get(k)) for d in (read, write) for k in ("bw_bytes", "iops")]
    if any(n is None for n in numbers):
        return None
    rb, ri, wb, wi = (float(n or 0) for n in numbers)
    return FioJob(raw["jobname"], error, rb, ri, wb, wi)


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return float(value)
