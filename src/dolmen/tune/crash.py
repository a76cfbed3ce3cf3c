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

Never set it outside tests: it exists so that a crash can be placed exactly.
"""

from __future__ import annotations

import os
import signal

ENV = "DOLMEN_TUNE_CRASH_AT"


class CrashPoints:
    """Kills the process at the configured point of one phase (see module docstring)."""

    def __init__(self, phase: str) -> None:
        spec = os.environ.get(ENV, "").strip()
        want_phase, _, n = spec.rpartition(":")
        self.point: int | None = None
        if spec and (want_phase or "apply") == phase and n.isdigit():
            self.point = int(n)

    def at(self, n: int) -> None:
        """SIGKILL this process if ``n`` is the configured point."""
        if self.point == n:
            os.kill(os.getpid(), signal.SIGKILL)
