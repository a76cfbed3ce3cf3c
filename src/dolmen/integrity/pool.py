"""``parallel_map``: a function over a list on a few threads, results in order.

concurrent.futures would do, but it imports logging and more (30 ms of a verify that
takes a few hundred), and a future per item costs more than listing one folder. The
work here (``lstat``, ``read``, SHA-256) releases the GIL, so threads run side by side.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def parallel_map(fn: Callable[[T], R], items: Sequence[T], workers: int) -> list[R]:
    """``[fn(x) for x in items]`` on up to ``workers`` threads; the first exception an
    item raised is raised here, after every thread stopped."""
    if workers < 2 or len(items) < 2:
        return [fn(x) for x in items]
    results: list[R | None] = [None] * len(items)
    errors: list[BaseException] = []
    counter = itertools.count()  # next() on it is atomic under the GIL

    def work() -> None:
        try:
            while not errors and (i := next(counter)) < len(items):
                results[i] = fn(items[i])
        except BaseException as e:  # handed to the caller's thread
            errors.append(e)

    threads = [
        threading.Thread(target=work, name=f"dolmen-integrity-{n}", daemon=True)
        for n in range(min(workers, len(items)))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results  # type: ignore[return-value]
