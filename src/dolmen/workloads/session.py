"""``Workloads``: one validate (or bench) run's workloads, each run at most once.

Built from the host, the site config (``[workloads]`` budgets), the device and the flags;
``run(name)`` imports the runner, builds its ``Request`` and remembers the result or the
``Unavailable`` it raised, so the three memory checks share one memory run. ``Aborted``
is remembered too: after Ctrl-C nothing else starts.
"""

from __future__ import annotations

import _thread
import importlib
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from dolmen.config import Config
from dolmen.host import Host
from dolmen.host.deadline import Deadline
from dolmen.workloads import RUNNERS
from dolmen.workloads.engine import sigterm_as_ctrl_c
from dolmen.workloads.model import Aborted, Progress, Request, Unavailable, no_progress

# name -> (default seconds, per GPU). Defaults keep the whole tier on one GPU under 3 min
# (docs/validate-full.md); sites change them in [workloads] as "<name>_s".
BUDGETS: dict[str, tuple[float, bool]] = {
    "gemm": (30.0, True),
    "memory": (15.0, True),
    "collective": (15.0, False),
    "storage": (20.0, False),
    "dcgm": (90.0, False),
}
SMOKE_BUDGET_S = 0.05  # per workload and GPU under Request.smoke: tests on 2 shared cores


class Workloads:
    """The workloads of one run on ``host``; see the module docstring."""

    def __init__(
        self,
        host: Host,
        config: Config | None = None,
        *,
        device: str = "cpu",
        force: bool = False,
        smoke: bool = False,
        progress: Progress = no_progress,
        gpus: Iterable[int] | None = None,
        subjects: Iterable[str] = (),
        scratch: Iterable[str] = (),
        notify: Callable[[str], None] | None = None,
        label: str = "full tier",
        deadline: Deadline | None = None,
    ) -> None:
        if device not in ("cpu", "cuda"):
            raise ValueError(f"device must be cpu or cuda, not {device!r}")
        self.host = host
        self.config = config or Config()
        self.device = device
        self.force = force
        self.smoke = smoke
        self.progress = progress
        self.gpus = tuple(gpus or ()) if device == "cuda" else ()
        self.subjects = tuple(subjects) if device == "cuda" else ()
        self.scratch = tuple(scratch)
        self.notify = notify or (lambda line: None)
        self.label = label  # what the announce line calls the run ("full tier", "bench")
        # The run's --timeout: the workloads stop at it as at Ctrl-C, and ``timed_out``
        # says that is why (validate's backstop would otherwise end the process in the
        # middle of one, fio writing on in its own session). The same Deadline then bounds
        # the checks, which get what the workloads left of it (checks/suite.py).
        self.deadline = deadline or Deadline()
        self.timed_out = False
        self._done: dict[str, Any] = {}
        self._aborted: Aborted | None = None
        self._order = list(RUNNERS)
        self._plan: list[str] = []  # what prepare() runs, in order (for the tier's ETA)

    @property
    def planned(self) -> tuple[str, ...]:
        """What ``prepare`` runs (or ran), in order."""
        return tuple(self._plan)

    @property
    def gpu_count(self) -> int:
        """K of "about N min on K GPUs": the GPUs a per-GPU workload runs on (1 on cpu)."""
        return max(len(self.gpus), 1)

    @property
    def dcgm_level(self) -> int:
        """DCGM's run level for the dcgm workload (``[workloads] dcgm_level``, 1 by default)."""
        from dolmen.workloads.dcgm import DEFAULT_LEVEL

        return int(self.config.get("workloads", "dcgm_level", DEFAULT_LEVEL))

    def budget(self, name: str) -> float:
        """Seconds ``name`` may take in all: its ``[workloads] <name>_s`` (or default),
        times the GPUs for a per-GPU workload; DCGM's default follows its run level."""
        default, per_gpu = BUDGETS.get(name, (10.0, False))
        if name == "dcgm":
            from dolmen.workloads.dcgm import BUDGET_S

            default = BUDGET_S[self.dcgm_level]
        seconds = float(self.config.get("workloads", f"{name}_s", default))
        if self.smoke:
            seconds = SMOKE_BUDGET_S
        return seconds * self.gpu_count if per_gpu else seconds

    def counted(self, name: str) -> bool:
        """Whether ``name``'s budget is time this run spends: DCGM runs on the GPUs only
        (never with ``--device cpu``), so its minutes are neither in the total nor the ETA."""
        return name != "dcgm" or self.device == "cuda"

    def budget_total(self, names: Iterable[str] | None = None) -> float:
        """The seconds of every workload in ``names`` (all of ``RUNNERS`` by default) that
        this run spends (``counted``)."""
        names = self._order if names is None else names
        return sum(self.budget(n) for n in names if self.counted(n))

    def announce(self, names: Iterable[str] | None = None) -> str:
        """The line printed before the tier starts: "full tier: about 3 min on 1 GPU"."""
        names = list(self._order if names is None else names)
        total = self.budget_total(names)
        about = f"{round(total / 60)} min" if total >= 90 else f"{max(round(total), 1)} s"
        where = "the CPU" if self.device == "cpu" else f"{self.gpu_count} GPU(s)"
        listed = ", ".join(n for n in names if self.counted(n))
        if any(not self.counted(n) for n in names):
            listed += "; dcgm: GPUs only" if listed else "dcgm: GPUs only"
        # The exact sum too: "about 3 min" is the budgets' 170 s, rounded (the figure the
        # docs compare with dcgmi diag -r 3).
        return (
            f"{self.label}: about {about} on {where} ({listed}); "
            f"budgets {total:g} s in all; Ctrl-C stops it"
        )

    def request(self, name: str) -> Request:
        """The ``Request`` ``run(name)`` hands its runner."""
        plan = self._plan if name in self._plan else [name]
        after = self.budget_total(plan[plan.index(name) + 1 :])

        def progress(label: str, done: float, eta_s: float | None) -> None:
            left = (1.0 - done) * self.budget(name) if eta_s is None else eta_s
            self.progress(label, done, left + after)  # the ETA of the whole tier

        return Request(
            device=self.device,
            gpus=self.gpus,
            budget_s=self.budget(name),
            force=self.force,
            smoke=self.smoke,
            scratch=self.scratch,
            progress=progress,
            subjects=self.subjects,
            dcgm_level=self.dcgm_level,
        )

    def run(self, name: str) -> Any:
        """The result of workload ``name``, run on first call; raises the Unavailable it
        raised then, and Aborted for every call after a Ctrl-C."""
        if name not in self._done:
            self._done[name] = self._first(name)
        got = self._done[name]
        if isinstance(got, Unavailable):
            raise got
        return got

    def _first(self, name: str) -> Any:
        """Run ``name``: its result or the Unavailable it raised; Aborted goes up."""
        if self._aborted is not None:
            raise Aborted(self._aborted.during)
        if name not in RUNNERS:
            raise Unavailable(f"no workload named {name!r}; known: {', '.join(RUNNERS)}")
        if self.host.kind != "live":
            return Unavailable("workloads run on the live host only: this is a bundle")
        try:
            return _runner(name)(self.request(name))
        except Unavailable as e:
            return e
        except Aborted as e:
            self._aborted = e
            raise
        except KeyboardInterrupt:  # a runner outside its abortable() block
            self._aborted = Aborted(name)
            raise self._aborted from None

    def prepare(self, names: Iterable[str]) -> None:
        """Run ``names`` in order before the checks read them (outside the checks' time
        limit), after saying what the tier will take; Unavailable is kept for the check
        to report, Aborted goes up (nothing else starts), after a SIGTERM too."""
        wanted = set(names)
        names = [n for n in self._order if n in wanted]
        if not names:
            return
        self._plan = names
        if self.host.kind == "live":
            self.notify(self.announce(names))
        with sigterm_as_ctrl_c(), self._stop_at_timeout():
            for name in names:
                try:
                    self.run(name)
                except Unavailable:
                    continue

    @contextmanager
    def _stop_at_timeout(self) -> Iterator[None]:
        """Inside, the run's ``deadline`` interrupts the main thread as Ctrl-C does (the
        workloads then stop and clean up through ``Aborted``) and sets ``timed_out``: a
        SIGTERM to the main thread, which ``sigterm_as_ctrl_c`` turns into Ctrl-C."""
        left = self.deadline.remaining()
        if left is None:
            yield
            return

        main = threading.current_thread() is threading.main_thread()

        def fire() -> None:
            self.timed_out = True
            if main:  # a real signal, which also ends a wait in a system call (fio's)
                signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGTERM)
            else:
                _thread.interrupt_main()

        timer = threading.Timer(left, fire)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    def results(self) -> dict[str, Any]:
        """Name -> result of every workload that ran (the bench JSON's ``results``)."""
        return {n: r for n, r in self._done.items() if not isinstance(r, Unavailable)}

    def errors(self) -> dict[str, str]:
        """Name -> reason of every workload that could not run (the bench JSON's ``errors``)."""
        return {n: r.reason for n, r in self._done.items() if isinstance(r, Unavailable)}


def _runner(name: str) -> Any:
    """The function RUNNERS names; a module not in this build is Unavailable, not a crash."""
    module, _, function = RUNNERS[name].partition(":")
    try:
        return getattr(importlib.import_module(module), function)
    except ModuleNotFoundError as e:
        if e.name != module:
            raise
        raise Unavailable(f"the {name} workload is not in this build of dolmen") from None
