"""Fork the test process safely: the child never returns into pytest.

A forked pytest that got back into the test loop runs the rest of the suite a second time
while its parent waits on it (CI ran past its limit that way: a SIGINT landed in the child
as ``os.fork()`` returned, before any ``try``). Here the signals are blocked until the child
is inside its ``try``, every path of the child ends in ``os._exit``, even when the one
signal a test sends lands after the work, and the parent never waits without a limit.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable

_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def fork(work: Callable[[], object], *, code: int = 0) -> int:
    """Run ``work`` in a forked child that exits with ``code`` whatever happens; its pid.

    SIGINT and SIGTERM are blocked across the fork: one sent at once would otherwise raise
    in the child as ``os.fork()`` returns, before any ``try`` could catch it, and that child
    would end pytest's session (its finalizers included) as if it were the parent's.
    """
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    pid = os.fork()
    if pid:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        return pid
    try:  # pragma: no cover - the child
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)  # a pending signal lands here
            work()
        except BaseException:
            pass
        finally:
            os._exit(code)
    except BaseException:  # the one signal a test sends, raised inside the finally
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
