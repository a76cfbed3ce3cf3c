"""SIGINT and SIGTERM while the engine changes a host: stop the apply, never the rollback.

An apply interrupted by Ctrl-C or by a service manager's SIGTERM rolls back on the spot
(engine.py) rather than leaving the host partly tuned for ``recover``. While a
``Signals`` block is *armed* the first SIGINT/SIGTERM raises ``Interrupted`` where the
apply stands; once *held* (rolling back, committing, writing the audit result) signals
are only noted, so the restore runs to its end. SIGKILL cannot be caught: the journal
covers it. Outside the main thread Python cannot set handlers, and nothing changes.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any

CAUGHT = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived while an apply was armed; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Signals:
    """A context: armed (raise ``Interrupted`` once) until ``hold()``; see module docstring."""

    def __init__(self, *, armed: bool = True) -> None:
        self.armed = armed
        self.received: int | None = None
        self._old: dict[int, Any] = {}

    def __enter__(self) -> Signals:
        if threading.current_thread() is threading.main_thread():
            for s in CAUGHT:
                self._old[s] = signal.signal(s, self._handle)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for s, old in self._old.items():
            signal.signal(s, old)

    def arm(self) -> None:
        """Raise on the next signal; at once if one came while held (before the journal)."""
        if self.received is not None:
            self.armed = False
            raise Interrupted(self.received)
        self.armed = True

    def hold(self) -> None:
        """From now on only note signals (a rollback or a commit must finish)."""
        self.armed = False

    @property
    def name(self) -> str:
        """The signal received, for messages (``SIGTERM``)."""
        return signal.Signals(self.received).name if self.received else ""

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.received = self.received or signum
        if self.armed:
            self.armed = False
            raise Interrupted(signum)
