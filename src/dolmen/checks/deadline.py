"""The run's deadline as the runner applies it: each check's own time limit, the checks a
run that ran out of time did not start, and the one finding that says on what it waited.

``dolmen validate --timeout 30s`` (NHC's ``-t``) gives the run a ``host.deadline``
(dolmen.host.deadline): commands and the NVML read stop at it on their own and say
``timed out``. Here, the runner starts no check once it has passed (each one not started
is ``unknown``: "not run: ..."), and ``run.timeout``, an ``unknown`` finding of the run
itself, says what the run was waiting on when the time ran out, so that the verdict is
undecided in every output (terminal, JSON, the Slurm and NPD reason line), exit code 2.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from dolmen.checks.model import CheckSpec, Finding, Outcome, Status
from dolmen.host.deadline import Deadline

# The finding of a run that ran out of time: not a registered check (nothing to select or
# disable), one per verdict at most.
RUN_TIMEOUT = "run.timeout"
REMEDY = (
    "Find why the named command or call hangs (a wedged driver: `dmesg`, `nvidia-smi -q` "
    "by hand); raise --timeout only if the host is merely slow."
)


class CheckTimeout(Exception):
    """A check body ran past its own time limit (its computation, waits not counted)."""


class RunTimeout(BaseException):
    """The run's deadline passed while a check computed. Not an Exception: no ``except
    Exception`` on the way (a check's, the fact store's) may take it for a failed read."""


def not_run(deadline: Deadline) -> Outcome:
    """The outcome of a check the run had no time left to start."""
    return Outcome(
        Status.UNKNOWN,
        "host",
        f"not run: the run's --timeout of {deadline.seconds or 0:g} s had run out",
        "",  # the check's remedy is for its signal, which nobody read: run.timeout's applies
        {"run_timeout_s": deadline.seconds},
    )


def ran_out(deadline: Deadline, check_id: str) -> Outcome:
    """The outcome of a check whose computation the run's deadline interrupted."""
    if deadline.cut is None:
        deadline.cut, deadline.cut_in = "its own computation", check_id
    return Outcome(
        Status.UNKNOWN,
        "host",
        f"timed out: the run's --timeout of {deadline.seconds or 0:g} s ran out in this check",
        None,
        {"run_timeout_s": deadline.seconds},
    )


def timeout_finding(deadline: Deadline, skipped: Sequence[str]) -> Finding | None:
    """``run.timeout`` when the deadline cut a wait or left checks unstarted, else None."""
    if deadline.cut is None and not skipped:
        return None
    waited = deadline.cut or "nothing (it ran out between checks)"
    where = f" ({deadline.cut_in})" if deadline.cut_in else ""
    summary = f"timed out after {deadline.seconds or 0:g} s waiting on {waited}{where}"
    if skipped:
        summary += f"; {len(skipped)} check(s) not run"
    return Finding(
        check=RUN_TIMEOUT,
        category="run",
        status=Status.UNKNOWN,
        subject="host",
        summary=summary,
        remedy=REMEDY,
        evidence={
            "timeout_s": deadline.seconds,
            "waiting_on": deadline.cut,
            "check": deadline.cut_in,
            "not_run": list(skipped),
        },
        gating=True,
    )


def is_run_timeout(finding: Finding) -> bool:
    """Whether ``finding`` is the run's own timeout (``run.timeout``)."""
    return finding.check == RUN_TIMEOUT


@contextmanager
def time_limit(seconds: float, deadline: Deadline, spec: CheckSpec | None = None) -> Iterator[None]:
    """Interrupt a runaway check: CheckTimeout past ``seconds`` of its own computation
    (time in commands and NVML reads, which have their own limits, does not count: an
    nvidia-smi that takes 20 s on 8 GPUs is no runaway check), RunTimeout once the run's
    deadline has passed outside such a wait. Main thread only; elsewhere no limit."""
    start, waited = time.monotonic(), deadline.waited_now()

    def arm(wanted: float) -> None:
        left = deadline.remaining()
        wait = wanted if left is None else min(wanted, left)
        signal.setitimer(signal.ITIMER_REAL, max(wait, 0.01))

    def _raise(signum: int, frame: object) -> None:
        if deadline.in_call():  # the call stops at its own limit or the deadline: let it
            arm(0.1)
            return
        if deadline.expired():
            raise RunTimeout(spec.id if spec else "")
        own = time.monotonic() - start - (deadline.waited_now() - waited)
        if own < seconds:
            arm(seconds - own)
            return
        raise CheckTimeout(f"ran over {seconds:g} s")

    try:
        old = signal.signal(signal.SIGALRM, _raise)
    except ValueError:  # not the main thread, where alone Python runs signal handlers
        yield
        return
    arm(seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# How long past its deadline a run may go before the backstop ends the process: the
# cooperative stops above take well under a second; this is for what they cannot reach.
BACKSTOP_GRACE = 3.0


def backstop(
    deadline_of: Callable[[], Deadline], seconds: float, say: Callable[[str], None], code: int
) -> Callable[[], None]:
    """End this process ``BACKSTOP_GRACE`` seconds after a deadline of ``seconds`` that the
    run did not keep, after ``say`` gave the one line a scheduler reads; the function that
    cancels it once the run is done.

    The run stops on its own at its deadline wherever it waits on a command, on NVML, or
    computes. A read that blocks in the kernel (a wedged driver's /proc/driver/nvidia file,
    a dead NFS server) holds the main thread where no signal handler runs; this thread,
    which the blocked call does not hold (it released the GIL), is NHC's watchdog.
    """

    def fire() -> None:
        what = deadline_of().waiting_on() or "the run"
        say(
            f"dolmen: undecided: timed out after {seconds:g} s on {what} "
            f"(not interruptible: ended {BACKSTOP_GRACE:g} s later)"
        )
        os._exit(code)

    import threading  # only with --timeout: a quick run without one does not import it

    timer = threading.Timer(seconds + BACKSTOP_GRACE, fire)
    timer.daemon = True
    timer.start()
    return timer.cancel
