"""The storage workload without fio: the same four phases in Python, with direct I/O.

O_DIRECT wants the buffer, the offset and the length aligned to the device's logical
block; an anonymous ``mmap`` is page-aligned (4 KiB), and every offset and length here
is a multiple of 4 KiB. Sequential phases run ``SEQ_DEPTH`` threads over interleaved
1 MiB blocks (block ``k`` by thread ``k % depth``: one stream with four requests in
flight, fio's ``iodepth=4``); random phases run ``RAND_THREADS`` threads on 4 KiB blocks.
``os.pread``/``os.pwrite`` release the GIL for the system call, so the threads overlap.

Where O_DIRECT is refused (``EINVAL``: a file system without it), the file is opened
buffered and its pages are dropped (``posix_fadvise(DONTNEED)`` after an ``fsync``)
before each read phase; the result says so (``direct`` False), since a buffered figure
is the page cache's as much as the device's.
"""

from __future__ import annotations

import errno
import mmap
import os
import random
import threading
import time
from collections.abc import Callable

from dolmen.workloads.storage_fio import RAND_BLOCK, SEQ_BLOCK, SEQ_DEPTH

RAND_THREADS = 8
_O_DIRECT = getattr(os, "O_DIRECT", 0)


def open_file(path: str, *, direct: bool = True) -> tuple[int, bool]:
    """A new file at ``path`` (never an existing one: O_EXCL) and whether it is direct."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    if direct and _O_DIRECT:
        try:
            return os.open(path, flags | _O_DIRECT, 0o600), True
        except OSError as e:
            if e.errno != errno.EINVAL:
                raise
    return os.open(path, flags, 0o600), False


def _buffer(size: int) -> mmap.mmap:
    buf = mmap.mmap(-1, size)
    buf.write(os.urandom(size))  # incompressible: some devices compress or dedupe zeros
    return buf


def _threads(count: int, body: Callable[[int, threading.Event], int]) -> int:
    """Run ``body(thread index, stop)`` in ``count`` threads; the sum of what they return.

    Ctrl-C (or one thread's error) sets ``stop`` and waits for every thread before it
    propagates: the caller closes the file next, and a thread still writing to a closed
    descriptor number could write into whatever file is opened under that number.
    """
    totals = [0] * count
    errors: list[BaseException] = []
    stop = threading.Event()

    def run(i: int) -> None:
        try:
            totals[i] = body(i, stop)
        except BaseException as e:
            errors.append(e)
            stop.set()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(count)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    except BaseException:
        stop.set()
        for t in threads:
            if t.ident is not None:
                t.join()
        raise
    if errors:
        raise errors[0]
    return sum(totals)


def seq_write(fd: int, file_bytes: int) -> float:
    """Write the whole file in 1 MiB blocks, fsync'd; bytes per second."""
    blocks = file_bytes // SEQ_BLOCK

    def body(i: int, stop: threading.Event) -> int:
        buf, done = _buffer(SEQ_BLOCK), 0
        for k in range(i, blocks, SEQ_DEPTH):
            if stop.is_set():
                break
            done += os.pwrite(fd, buf, k * SEQ_BLOCK)
        return done

    t0 = time.perf_counter()
    total = _threads(SEQ_DEPTH, body)
    os.fsync(fd)
    return total / (time.perf_counter() - t0)


def drop_cache(fd: int, direct: bool) -> None:
    """Buffered only: write back, then drop the file's pages, so a read meets the device."""
    if not direct:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def seq_read(fd: int, file_bytes: int, seconds: float) -> float:
    """Read the file in 1 MiB blocks, again from the start until ``seconds``; bytes/s."""
    blocks = file_bytes // SEQ_BLOCK
    until = time.perf_counter() + seconds

    def body(i: int, stop: threading.Event) -> int:
        buf, done = _buffer(SEQ_BLOCK), 0
        if i >= blocks:
            return 0
        while True:
            for k in range(i, blocks, SEQ_DEPTH):
                done += os.preadv(fd, [buf], k * SEQ_BLOCK)
                if stop.is_set() or time.perf_counter() > until:
                    return done

    t0 = time.perf_counter()
    total = _threads(SEQ_DEPTH, body)
    return total / (time.perf_counter() - t0)


def rand_io(fd: int, file_bytes: int, seconds: float, *, write: bool) -> float:
    """4 KiB reads or writes at random aligned offsets for ``seconds``; operations/s."""
    blocks = file_bytes // RAND_BLOCK
    until = time.perf_counter() + seconds

    def body(i: int, stop: threading.Event) -> int:
        buf, rng, ops = _buffer(RAND_BLOCK), random.Random(i), 0
        while time.perf_counter() < until and not stop.is_set():
            offset = rng.randrange(blocks) * RAND_BLOCK
            if write:
                os.pwrite(fd, buf, offset)
            else:
                os.preadv(fd, [buf], offset)
            ops += 1
        return ops

    t0 = time.perf_counter()
    total = _threads(RAND_THREADS, body)
    if write:
        os.fsync(fd)
    return total / (time.perf_counter() - t0)
