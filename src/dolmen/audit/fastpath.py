"""The verifier's fast path: is a whole file of lines intact, checked in C-level passes,
and, for a large file on a machine with several cores, in worker processes.

``lines_intact`` checks every line's hash, tail frame and prev_hash link in a few
passes that iterate in C (the fixed frame of event.py makes that possible); only a
file that fails it is parsed line by line (classify.py). A file is checked in runs
of RUN_BYTES that stay in the CPU's caches; the link between two runs (the first
line's prev_hash against the hash that ends the line before, which the check of the
run before compared with its recomputed hash) is checked on its own, so the answer
is that of one ``lines_intact`` over all the lines.

Why processes: one SHA-256 call per event is most of the work, and CPython's hashlib
releases the GIL only for inputs of 2048 bytes or more (an event is about 560), so
threads run the hashes one at a time. Worker processes check spans of whole lines,
run by run as above, and the parent checks the links between spans the same way, so
the answer is again exactly that of the serial pass. The file's bytes reach the
workers by fork (inherited copy-on-write, never pickled); where fork is unavailable,
the pool cannot start or a worker dies, the serial pass runs instead.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import operator
import os
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from dolmen.audit.event import HASH_AT, HASH_MARK, HEAD, PREV_AT, TAIL_LEN

MIN_LINE = len(HEAD) + 64 + TAIL_LEN
MAX_WORKERS = 4
# Below this size a file is checked in this process. Measured on the 2-core development
# VM, idle (serial pass about 470 MB/s): two workers broke even at 16 to 24 MB and took
# 12% less time at 32 MB, 27% at 48 MB, 37% at 100 MB. Workers cost about 12% more CPU
# in all (forks, page faults), so on a machine whose cores are all busy they are slower.
PARALLEL_MIN_BYTES = 32 << 20
# Spans per worker: a worker slowed by other work on a shared machine takes fewer.
SPANS_PER_WORKER = 4
# Lines are checked in runs of about this many bytes, small enough to stay in the caches.
RUN_BYTES = 256 << 10
# For tests and benchmarks only: the size from which files are checked in worker
# processes (0: every non-empty file), instead of PARALLEL_MIN_BYTES.
MIN_BYTES_ENV = "DOLMEN_AUDIT_PARALLEL_MIN_BYTES"

_PRE = operator.itemgetter(slice(None, -TAIL_LEN))
_TAIL = operator.itemgetter(slice(-TAIL_LEN, None))
_PREV = operator.itemgetter(PREV_AT)
_HEXDIGEST = operator.methodcaller("hexdigest")
_TAIL_OPEN = HASH_MARK.decode()
_TAIL_CLOSE = '"}}'
_TAIL_JOIN = _TAIL_CLOSE + _TAIL_OPEN


@dataclass(frozen=True)
class FastCheck:
    """The fast path's answer for one file: ``intact`` or not (then the slow path names the
    break); when intact, its number of ``lines`` and the hash of the last one."""

    intact: bool
    lines: int = 0
    last_hash: str = ""
    workers: int = 0  # worker processes that checked it; 0: checked in this process


def lines_intact(lines: list[bytes], prev: bytes) -> bool:
    """Whether every line's hash, tail frame and prev_hash link are right (``prev``: the
    hash the first line must name), in a few passes that iterate in C: the tails of all
    lines must equal the frame rebuilt around the recomputed hashes, and the prev_hash
    fields the hashes shifted by one."""
    if not lines:
        return True
    if min(map(len, lines)) < MIN_LINE:
        return False
    hexes = list(map(_HEXDIGEST, map(hashlib.sha256, map(_PRE, lines))))
    tails = b"".join(map(_TAIL, lines))
    if tails != (_TAIL_OPEN + _TAIL_JOIN.join(hexes) + _TAIL_CLOSE).encode("ascii"):
        return False
    return b"".join(map(_PREV, lines)) == prev + "".join(hexes[:-1]).encode("ascii")


def check_file(
    data: bytes, prev: str, *, min_bytes: int | None = None, workers: int | None = None
) -> FastCheck:
    """Whether ``data`` (a whole file) is complete lines that chain intact from ``prev``
    (FileCheck, waited for)."""
    with FileCheck(data, prev, min_bytes=min_bytes, workers=workers) as check:
        return check.result()


class FileCheck:
    """The fast-path check of one file (``data``, chaining from ``prev``), started when made.

    Files of ``min_bytes`` or more (default: $DOLMEN_AUDIT_PARALLEL_MIN_BYTES, else
    PARALLEL_MIN_BYTES) are checked by ``workers`` processes (default: the usable cores,
    at most MAX_WORKERS) when there are two or more; meanwhile (``in_workers``) the caller
    may do other work before ``result()``. The answer is the same either way. Use it as a
    context manager: leaving it stops the workers."""

    def __init__(
        self, data: bytes, prev: str, *, min_bytes: int | None = None, workers: int | None = None
    ) -> None:
        self._data = data
        self._answer: FastCheck | None = None
        self._pool: ProcessPoolExecutor | None = None
        self._futures: list[Future[int]] = []
        self._workers = 0
        self._lifeline = -1  # the write end of the workers' lifeline pipe
        if not data:
            self._answer = FastCheck(True, 0, prev)
        elif not data.endswith(b"\n"):
            self._answer = FastCheck(False)  # a torn last line: the slow path names it
        elif _prev_at(data, 0) != prev.encode("ascii"):
            self._answer = FastCheck(False)
        else:
            limit = _min_bytes() if min_bytes is None else min_bytes
            n = usable_workers() if workers is None else workers
            if n > 1 and len(data) >= limit and "fork" in multiprocessing.get_all_start_methods():
                self._start(n)

    @property
    def in_workers(self) -> bool:
        """Whether worker processes are checking the file now."""
        return self._pool is not None and self._answer is None

    def result(self) -> FastCheck:
        """The answer (waits for the workers, if any)."""
        if self._answer is None:
            found = self._collect() if self._pool is not None else None
            self._answer = found if found is not None else self._serial()
        return self._answer

    def close(self) -> None:
        """Stop the workers (those still checking are waited for, the others cancelled)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._lifeline >= 0:
            os.close(self._lifeline)
            self._lifeline = -1

    def __enter__(self) -> FileCheck:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _serial(self) -> FastCheck:
        data = self._data
        lines = _check_span(data, 0, len(data))
        if lines < 0:
            return FastCheck(False)
        return FastCheck(True, lines, _hash_before(data, len(data)).decode("ascii"))

    def _start(self, n: int) -> None:
        data = self._data
        spans = list(cut(data, 0, len(data), -(-len(data) // (n * SPANS_PER_WORKER))))
        # The links between spans: the first line of each span after the first names the
        # hash at the end of the line before it (the worker of that span checks that hash
        # against its recomputed one; the worker of this span, every link after its first).
        for start, _ in spans[1:]:
            if _prev_at(data, start) != _hash_before(data, start):
                self._answer = FastCheck(False)
                return
        # With fork, the workers' arguments are inherited, not pickled: ``data`` is shared.
        # The lifeline: a pipe whose write end only this process keeps, so that workers
        # see it close (and exit) when this process dies without stopping them (SIGTERM,
        # SIGKILL); otherwise they would wait for work forever, holding the file.
        ctx = multiprocessing.get_context("fork")
        self._workers = min(n, len(spans))
        try:
            life_r, self._lifeline = os.pipe()
        except OSError:
            return  # result() checks in this process
        self._pool = ProcessPoolExecutor(
            self._workers,
            mp_context=ctx,
            initializer=_worker_start,
            initargs=(data, life_r, self._lifeline),
        )
        try:
            # The first submit forks all the workers (fork: no later, dynamic spawning).
            self._futures = [self._pool.submit(_check_run, s, e) for s, e in spans]
        except (OSError, BrokenProcessPool):
            self.close()  # could not fork: result() checks in this process
        finally:
            os.close(life_r)

    def _collect(self) -> FastCheck | None:
        """The workers' answer; None when they failed (a worker died)."""
        total = 0
        try:
            for f in as_completed(self._futures):
                count = f.result()
                if count < 0:
                    return FastCheck(False)  # a broken span: the others need not finish
                total += count
        except (OSError, BrokenProcessPool):
            return None
        finally:
            self.close()
        last = _hash_before(self._data, len(self._data)).decode("ascii")
        return FastCheck(True, total, last, self._workers)


def usable_workers() -> int:
    """Worker processes for a parallel check: the cores this process may run on, at most
    MAX_WORKERS (beyond that, reading the file and the serial checks dominate)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return min(cores, MAX_WORKERS)


def _min_bytes() -> int:
    try:
        return int(os.environ.get(MIN_BYTES_ENV, PARALLEL_MIN_BYTES))
    except ValueError:
        return PARALLEL_MIN_BYTES


def cut(data: bytes, start: int, end: int, size: int) -> Iterator[tuple[int, int]]:
    """``data[start:end]`` (whole lines: ``data[end - 1]`` is a newline) cut into runs of
    whole lines of about ``size`` bytes, as (start, end) offsets."""
    while start < end:
        stop = end if end - start <= size else data.find(b"\n", start + size - 1, end) + 1
        yield start, stop
        start = stop


def _check_span(data: bytes, start: int, end: int) -> int:
    """The number of lines of ``data[start:end]`` (whole lines) if they are intact, else -1.
    The first line's prev_hash is taken as given (the caller checks that link).

    The span is checked in runs of RUN_BYTES, whose lines stay in the CPU's caches through
    all the passes of ``lines_intact`` (1.6 times as fast as one pass over 100 MB)."""
    total = 0
    for s, e in cut(data, start, end, RUN_BYTES):
        if s != start and _prev_at(data, s) != _hash_before(data, s):
            return -1
        lines = data[s : e - 1].split(b"\n")
        if not lines_intact(lines, lines[0][PREV_AT]):
            return -1
        total += len(lines)
    return total


def _prev_at(data: bytes, start: int) -> bytes:
    """The prev_hash field of the line that starts at ``start``."""
    return data[start + PREV_AT.start : start + PREV_AT.stop]


def _hash_before(data: bytes, end: int) -> bytes:
    """The hash field of the line that ends (with its newline) just before ``end``."""
    return data[end - 1 + HASH_AT.start : end - 1 + HASH_AT.stop]


class _Worker:
    data = b""  # in a worker: the file it checks runs of


def _worker_start(data: bytes, lifeline: int, parent_end: int) -> None:
    _Worker.data = data
    # Ctrl-C is the parent's to handle (it stops the pool); workers that saw the signal
    # too would each print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.close(parent_end)
    threading.Thread(target=_exit_with_parent, args=(lifeline,), daemon=True).start()


def _exit_with_parent(lifeline: int) -> None:
    """In a worker: wait for the lifeline to close (the parent is gone), then exit."""
    while os.read(lifeline, 1):
        pass
    os._exit(1)


def _check_run(start: int, end: int) -> int:
    """In a worker: ``_check_span`` of the file it was forked with."""
    return _check_span(_Worker.data, start, end)
