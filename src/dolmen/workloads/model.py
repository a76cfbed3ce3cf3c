"""What a workload is given and how it can refuse or stop (docs/validate-full.md).

A workload is a module ``dolmen.workloads.<name>`` with ``run(request) -> Result``; the
result is a frozen dataclass whose ``to_json()`` has the shape of docs/validate-full.md
(``dolmen bench`` writes it as is). This module imports nothing heavy: the checks and the
CLI build requests without paying for torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field

from dolmen.frozen import frozen

# (label, done 0..1, seconds left or None) -> None: the CLI draws a bar with it.
Progress = Callable[[str, float, float | None], None]


def no_progress(label: str, done: float, eta_s: float | None) -> None:
    """The default progress sink: says nothing (tests, pipes, JSON runs)."""


@frozen
class Request:
    """One workload's orders: where it runs, for how long, and how large.

    ``gpus`` are CUDA device indexes (empty on ``cpu``); ``subjects`` the finding subject of
    each (``gpu:<bus id>``, parallel to ``gpus``; ``gpu:<index>`` where it is shorter).
    ``budget_s`` is this workload's whole time budget; a workload divides it among its GPUs
    and steps. ``smoke``: tiny sizes, for tests on a 2-core machine. ``scratch``: the data
    mounts the storage workload writes to. ``dcgm_level``: DCGM's run level (``-r``) for the
    dcgm workload (``[workloads] dcgm_level``).
    """

    device: str  # "cpu" | "cuda"
    gpus: tuple[int, ...] = ()
    budget_s: float = 10.0
    force: bool = False
    smoke: bool = False
    scratch: tuple[str, ...] = ()
    progress: Progress = field(default=no_progress, compare=False, repr=False)
    subjects: tuple[str, ...] = ()
    dcgm_level: int = 1

    def subject(self, gpu: int | None) -> str:
        """The finding subject of CUDA device ``gpu`` (``host`` for a CPU run)."""
        if gpu is None:
            return "host"
        if gpu in self.gpus and len(self.subjects) == len(self.gpus):
            return self.subjects[self.gpus.index(gpu)]
        return f"gpu:{gpu}"


class Unavailable(Exception):
    """The workload cannot run here; ``reason`` says why and how to make it run.

    "torch is not installed: pip install torch", "GPU 3 is in use by pid 1234 (python):
    --force to run anyway", "workloads run on the live host only: this is a bundle".
    The check turns it into skip (or unknown) with the reason; at level full the verdict
    is then undecided, never healthy.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Aborted(Exception):
    """Ctrl-C during a workload: its tensors were released and the GPU caches emptied
    before this was raised; ``during`` names the workload that was running."""

    def __init__(self, during: str = "") -> None:
        super().__init__(f"interrupted during {during}" if during else "interrupted")
        self.during = during
