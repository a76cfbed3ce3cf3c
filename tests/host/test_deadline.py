"""A run's deadline (host/deadline.py) and the live host's commands under it: a command
that never answers is killed at the deadline with its children, and says ``timed out``."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from dolmen.host import RunStatus
from dolmen.host.deadline import Deadline
from dolmen.host.live import LiveHost
from dolmen.host.process import pid_alive


def test_a_deadline_clips_longer_waits_only() -> None:
    d = Deadline(5.0)
    assert d.clip(1.0) == (1.0, False)
    limit, cut = d.clip(60.0)
    assert cut and 4.0 < limit <= 5.0
    assert Deadline(None).clip(60.0) == (60.0, False) and Deadline(None).remaining() is None
    assert Deadline(0.0).expired() and Deadline(0.0).clip(1.0) == (0.0, True)


def test_waits_are_named_outermost_first_and_calls_are_timed() -> None:
    d = Deadline(None)
    with d.waiting("gpu.present"):
        assert not d.in_call()
        with d.waiting("nvidia-smi -q -x", call=True):
            assert d.in_call() and d.waiting_on() == "gpu.present: nvidia-smi -q -x"
            time.sleep(0.02)
    assert d.waiting_on() == "" and d.waited >= 0.02 and not d.in_call()


def test_the_first_cut_is_remembered_with_its_check() -> None:
    d = Deadline(3.0)
    with d.waiting("gpu.present"), d.waiting("nvidia-smi -q -x", call=True):
        assert d.timed_out("nvidia-smi -q -x") == "timed out after 3 s (the run's --timeout)"
    d.timed_out("ibstat")
    assert (d.cut, d.cut_in) == ("nvidia-smi -q -x", "gpu.present")


def _stand_in(tmp_path: Path) -> list[str]:
    """A command that never answers and has a child of its own; both write their pid."""
    script = tmp_path / "hang"
    script.write_text(
        f"#!/bin/sh\necho $$ > {tmp_path}/pids\nsleep 3600 &\necho $! >> {tmp_path}/pids\nwait\n"
    )
    script.chmod(0o755)
    return [str(script)]


def _pids(tmp_path: Path) -> list[int]:
    return [int(p) for p in (tmp_path / "pids").read_text().split()]


def test_a_command_is_killed_at_the_deadline_with_its_children(tmp_path: Path) -> None:
    host = LiveHost()
    host.deadline = Deadline(1.0)
    t0 = time.monotonic()
    with host.deadline.waiting("gpu.present"):
        res = host.run(_stand_in(tmp_path), timeout=60)
    assert time.monotonic() - t0 < 3
    assert res.status is RunStatus.TIMEOUT
    assert res.failure().startswith("timed out: ") and "the run's --timeout" in res.reason
    assert host.deadline.cut_in == "gpu.present"
    time.sleep(0.1)
    assert not any(pid_alive(p) for p in _pids(tmp_path))


def test_no_command_starts_once_the_deadline_has_passed(tmp_path: Path) -> None:
    host = LiveHost()
    host.deadline = Deadline(0.0)
    res = host.run(_stand_in(tmp_path))
    assert res.status is RunStatus.TIMEOUT and res.failure().startswith("timed out")
    assert not (tmp_path / "pids").exists()  # never ran


def test_a_command_interrupted_by_a_signal_does_not_outlive_it(tmp_path: Path) -> None:
    """A check's own time limit (SIGALRM) raising inside ``run`` kills the command too."""

    class Stop(Exception):
        pass

    def stop(signum: int, frame: object) -> None:
        raise Stop

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(Stop):
            LiveHost().run(_stand_in(tmp_path), timeout=60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    time.sleep(0.1)
    assert not any(pid_alive(p) for p in _pids(tmp_path))


def test_without_a_deadline_a_command_keeps_its_own_limit() -> None:
    res = LiveHost().run([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.3)
    assert res.reason == "timed out after 0.3 s"


def test_a_child_that_left_the_group_does_not_hold_the_run(tmp_path: Path) -> None:
    """A daemon the command started in a session of its own keeps the output pipe open
    after the kill: the run gives it a moment, then stops reading."""
    script = tmp_path / "escape"
    script.write_text(
        f"#!/bin/sh\nsetsid sleep 30 &\necho $! > {tmp_path}/escaped\nexec sleep 30\n"
    )
    script.chmod(0o755)
    t0 = time.monotonic()
    try:
        res = LiveHost().run([str(script)], timeout=0.5)
        assert res.status is RunStatus.TIMEOUT and time.monotonic() - t0 < 4
    finally:
        escaped = tmp_path / "escaped"
        if escaped.exists():
            os.kill(int(escaped.read_text()), signal.SIGKILL)
