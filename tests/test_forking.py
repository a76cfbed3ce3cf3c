"""tests/forking.py: a forked child never gets back into pytest, and nobody waits forever."""

from __future__ import annotations

import contextlib
import os
import signal
import time

import pytest

from tests import forking


def _raise(kind: type[BaseException]) -> None:
    raise kind("from the child")


@pytest.mark.parametrize("kind", [KeyboardInterrupt, SystemExit, RuntimeError])
def test_whatever_the_work_raises_the_child_exits_with_its_code(kind: type[BaseException]) -> None:
    status = forking.reap(forking.fork(lambda: _raise(kind), code=3))
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 3


def test_a_signal_after_the_work_still_ends_the_child_there() -> None:
    """SIGINT at every moment around the work's end: the child exits; the parent is back."""
    for delay in (0.0,) * 50 + (0.0005, 0.001, 0.002, 0.005):  # 0: as os.fork() returns
        pid = forking.fork(lambda: time.sleep(0.001))
        time.sleep(delay)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGINT)
        status = forking.reap(pid)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_reap_kills_a_child_past_its_limit() -> None:
    pid = forking.fork(lambda: time.sleep(60))
    with pytest.raises(AssertionError, match=r"still ran after 0\.2 s"):
        forking.reap(pid, limit=0.2)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, 0)
