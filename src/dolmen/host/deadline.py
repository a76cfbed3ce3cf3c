"""A run's deadline, and what the run is waiting on while it runs.

``dolmen validate --timeout 30s`` (NHC's ``-t``) bounds the whole run. The run cannot be
interrupted where it blocks: a command that never answers sits in ``communicate``, an
NVML call in the driver, neither of which a signal ends. So each wait asks the deadline
how long it may last (``clip``): ``LiveHost.run`` kills its command at the deadline and
the NVML worker (``host.gpu.nvml_worker``) its process, each saying ``timed out`` as any
timeout does, and the runner starts no check once the deadline has passed.

``waiting`` names what the run waits on (the check, then the command or call inside it),
so that a run that times out says on what: ``gpu.present: nvidia-smi -q -x``. A run with
no ``--timeout`` has a deadline of None, which clips nothing and still names the waits.
Monotonic time throughout: a clock set back by NTP must not lengthen a health check.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Deadline:
    """The end of one run (``seconds`` from now; None: no end) and its waits."""

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = seconds
        self.at = None if seconds is None else time.monotonic() + seconds
        self._waits: list[str] = []
        self.cut: str | None = None  # what the deadline cut first, once it did
        self.cut_in: str | None = None  # the outermost wait then: the check it ran in
        # Seconds spent in commands and NVML calls (finished ones), so that a check's limit
        # on its own computation does not count them (checks/runner.py).
        self.waited = 0.0
        self._since: float | None = None  # when the outermost call now running began

    def remaining(self) -> float | None:
        """Seconds left (0 once past), or None without a deadline."""
        return None if self.at is None else max(0.0, self.at - time.monotonic())

    def expired(self) -> bool:
        """Whether the deadline has passed."""
        return self.at is not None and time.monotonic() >= self.at

    def clip(self, timeout: float) -> tuple[float, bool]:
        """The time a wait of ``timeout`` seconds may take, and whether the deadline (not
        ``timeout``) is what limits it."""
        left = self.remaining()
        if left is None or left >= timeout:
            return timeout, False
        return left, True

    def timed_out(self, what: str) -> str:
        """The reason for a wait of ``what`` that the deadline cut, remembered as the run's
        cut (with the check it ran in): ``timed out after 30 s (the run's --timeout)``."""
        if self.cut is None:
            self.cut = what
            self.cut_in = next((w for w in self._waits[:1] if w != what), None)
        return f"timed out after {self.seconds or 0:g} s (the run's --timeout)"

    @contextmanager
    def waiting(self, what: str, *, call: bool = False) -> Iterator[None]:
        """Name ``what`` the run waits on while the block runs; ``call``: a command or an
        NVML read, whose time is not a check's own computation."""
        self._waits.append(what)
        outer = call and self._since is None
        if outer:
            self._since = time.monotonic()
        try:
            yield
        finally:
            self._waits.pop()
            if outer and self._since is not None:
                self.waited += time.monotonic() - self._since
                self._since = None

    def waited_now(self) -> float:
        """``waited``, plus the call running now."""
        now = time.monotonic()
        return self.waited + (now - self._since if self._since is not None else 0.0)

    def in_call(self) -> bool:
        """Whether a command or an NVML read is running now."""
        return self._since is not None

    def waiting_on(self) -> str:
        """What the run waits on now, outermost first: ``gpu.present: nvidia-smi -q -x``."""
        return ": ".join(self._waits)
