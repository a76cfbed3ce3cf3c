"""Fork the test process safely: the child never returns into pytest.

A forked pytest that got back into the test loop runs the rest of the suite a second time
while its parent waits on it (CI ran past its limit that way: a SIGINT landed in the child
after its work, between ``suppress`` and ``os._exit``). Here every path of the child ends in
``os._exit``, even when the one signal a test sends lands after the work; and the parent
never waits without a limit.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable


def fork(work: Callable[[], object], *, code: int = 0) -> int:
    """Run ``work`` in a forked child that exits with ``code`` whatever happens; its pid."""
    pid = os.fork()
    if pid:
        return pid
    try:  # pragma: no cover - the child
        try:
            with contextlib.suppress(BaseException):
                work()
        finally:
            os._exit(code)
    except BaseException:  # a signal raised inside the finally, before os._exit ran
        os._exit(code)
    os._exit(code)  # unreachable; keeps every path out of pytest


def reap(pid: int, *, limit: float = 120.0) -> int:
    """Wait for ``pid`` at most ``limit`` seconds (then SIGKILL it and fail); its status."""
    end = time.monotonic() + limit
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > end:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"forked child {pid} still ran after {limit:g} s: killed")
        time.sleep(0.005)
