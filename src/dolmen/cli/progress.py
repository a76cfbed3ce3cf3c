"""The progress bar of the active workloads on stderr: label, bar, percent and ETA.

Only on a terminal: a pipe or a log file gets no bar (no carriage returns in a Slurm log).
``terminal_progress`` gives the sink a ``Workloads`` session calls (dolmen.workloads.model
``Progress``); ``line`` is pure and tested.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from dolmen.workloads.model import Progress

WIDTH = 24


def line(label: str, done: float, eta_s: float | None, width: int = WIDTH) -> str:
    """``gemm: gpu 0 bf16  [######------]  42%  ETA 1:05``."""
    done = min(max(done, 0.0), 1.0)
    full = round(done * width)
    eta = ""
    if eta_s is not None and eta_s >= 0:
        minutes, seconds = divmod(round(eta_s), 60)
        eta = f"  ETA {minutes}:{seconds:02d}"
    return f"{label[:40]:<40} [{'#' * full}{'-' * (width - full)}] {done:4.0%}{eta}"


def terminal_progress(stream: TextIO | None = None, every_s: float = 0.2) -> Progress | None:
    """A sink drawing ``line`` in place on ``stream`` (stderr), or None when it is no
    terminal. Redraws at most every ``every_s`` and at each new label."""
    out = stream or sys.stderr
    if not out.isatty():
        return None
    shown_at, shown = 0.0, ""

    def draw(label: str, done: float, eta_s: float | None) -> None:
        nonlocal shown_at, shown
        now = time.monotonic()
        if label == shown and now - shown_at < every_s and done < 1.0:
            return
        shown_at, shown = now, label
        out.write("\r\x1b[2K" + line(label, done, eta_s))
        out.flush()

    return draw


def clear(stream: TextIO | None = None) -> None:
    """Erase the bar's line (before the report is printed)."""
    out = stream or sys.stderr
    if out.isatty():
        out.write("\r\x1b[2K")
        out.flush()
