"""TEST-ONLY fault injection: ``DOLMEN_TUNE_CRASH_AT`` SIGKILLs dolmen at a numbered point.

The crash tests prove that an apply killed anywhere is recovered exactly.
They set ``DOLMEN_TUNE_CRASH_AT=<n>`` (apply) or ``rollback:<n>`` and run a
real ``dolmen tune`` child process, which kills itself with SIGKILL, the
signal nothing can catch or clean up after, when it reaches point ``n``:

    apply:     0 after the begin record; for the k-th step, 1+2k after its
               original is journaled (before the write) and 2+2k after the
               write (before the done record); 1+2N before the commit.
    rollback:  0 after the rollback record; k+1 after the k-th revert (before
               its record is written).

A third field names another signal to send instead (``5:SIGTERM``, ``rollback:2:SIGINT``):
the tests of an apply that is asked to stop (Ctrl-C, a service manager) use it.

Never set it outside tests: it exists so that a crash can be placed exactly.
"""

from __future__ import annotations

import os
import signal

ENV = "DOLMEN_TUNE_CRASH_AT"


class CrashPoints:
    """Kills the process at the configured point of one phase (see module docstring)."""

    def __init__(self, phase: str) -> None:
        parts = os.environ.get(ENV, "").strip().split(":")
        if parts and parts[0].isdigit():
            parts.insert(0, "apply")
        self.point: int | None = None
        self.signal = signal.SIGKILL
        if len(parts) >= 2 and parts[0] == phase and parts[1].isdigit():
            self.point = int(parts[1])
            if len(parts) == 3 and parts[2] in ("SIGINT", "SIGTERM"):
                self.signal = signal.Signals[parts[2]]

    def at(self, n: int) -> None:
        """Signal this process (SIGKILL by default) if ``n`` is the configured point."""
        if self.point == n:
            os.kill(os.getpid(), self.signal)
