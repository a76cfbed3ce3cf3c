"""The NVML read in a worker process (host/gpu/nvml_worker.py): the same inventory as in
process, and a call that blocks (a stand-in for a hung driver: ``time.sleep``, a C call no
signal interrupts in the middle) ends at the deadline, naming the call, with no child left."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from dolmen.host.deadline import Deadline
from dolmen.host.gpu.model import GpuInventory
from dolmen.host.gpu.nvml import read_nvml
from dolmen.host.gpu.nvml_worker import read_nvml_bounded
from dolmen.host.process import pid_alive
from tests import forking
from tests.host.gpu.test_read import FakeNvml


def _children() -> set[int]:
    """This process's children, from /proc (a leaked worker would be one)."""
    me = os.getpid()
    found = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == me:
                found.add(int(name))
    return found


class Hangs(FakeNvml):
    """FakeNvml whose ``blocking`` call never returns (within a test) for GPU ``at``."""

    def __init__(self, blocking: str, at: int = 0, count: int = 1) -> None:
        super().__init__()
        self.blocking, self.at, self.count = blocking, at, count

    def nvmlDeviceGetCount(self) -> int:
        return self.count

    def __getattribute__(self, name: str) -> Any:
        if name == object.__getattribute__(self, "blocking"):
            at = object.__getattribute__(self, "at")

            def blocked(*args: Any) -> Any:
                if not args or args[0] == at or args[0] == ("handle", at):
                    time.sleep(3600)
                return getattr(FakeNvml, name)(self, *args)

            return blocked
        return object.__getattribute__(self, name)


def test_the_worker_answers_what_the_library_answers() -> None:
    before = _children()
    got = read_nvml_bounded(Deadline(None), lib=FakeNvml())
    assert isinstance(got, GpuInventory) and got == read_nvml(FakeNvml())
    assert _children() == before


def test_a_blocked_init_is_ended_at_the_deadline() -> None:
    before = _children()
    t0 = time.monotonic()
    got = read_nvml_bounded(Deadline(1.0), lib=Hangs("nvmlInit"))
    assert time.monotonic() - t0 < 3
    assert got == "timed out after 1 s (the run's --timeout) waiting on NVML (nvmlInit)"
    assert _children() == before


def test_a_blocked_handle_names_the_gpu_and_its_own_limit() -> None:
    got = read_nvml_bounded(
        Deadline(None), lib=Hangs("nvmlDeviceGetHandleByIndex", at=1, count=2), timeout=1.0
    )
    assert got == "timed out after 1 s waiting on NVML (nvmlDeviceGetHandleByIndex(1))"


def test_a_blocked_field_read_names_its_gpu() -> None:
    got = read_nvml_bounded(Deadline(0.8), lib=Hangs("nvmlDeviceGetPowerUsage"))
    assert isinstance(got, str) and got.endswith("(nvmlDeviceGetPowerUsage on GPU 0)")


def test_a_worker_that_dies_says_so() -> None:
    class Crashes(FakeNvml):
        def nvmlDeviceGetCount(self) -> int:
            os._exit(9)  # a segfault in the library, as the parent sees it

    got = read_nvml_bounded(Deadline(None), lib=Crashes(), timeout=5)
    assert got == "unreadable: NVML worker ended without an answer, in nvmlDeviceGetCount"


def test_a_library_that_raises_is_reported_not_raised() -> None:
    class Raises(FakeNvml):
        def nvmlDeviceGetCount(self) -> int:
            raise RuntimeError("boom")

    got = read_nvml_bounded(Deadline(None), lib=Raises(), timeout=5)
    assert got == "unreadable: NVML worker: RuntimeError: boom"


def test_no_worker_starts_once_the_deadline_has_passed() -> None:
    got = read_nvml_bounded(Deadline(0.0), lib=Hangs("nvmlInit"))
    assert isinstance(got, str) and got.startswith("timed out") and "not started" in got


def test_the_parent_ending_takes_a_blocked_worker_along() -> None:
    """PR_SET_PDEATHSIG: a health check killed by its caller leaves no worker behind."""
    r, w = os.pipe()

    def intermediate() -> None:  # starts a worker, reports its pid, then dies
        os.close(r)
        import dolmen.host.gpu.nvml_worker as nw

        real_fork = os.fork

        def fork() -> int:
            child = real_fork()
            if child:
                os.write(w, f"{child}\n".encode())
                os._exit(0)  # the parent dies while the worker blocks
            return child

        nw.os.fork = fork  # type: ignore[attr-defined]
        read_nvml_bounded(Deadline(None), lib=Hangs("nvmlInit"), timeout=30)

    pid = forking.fork(intermediate, code=1)
    os.close(w)
    worker = int(os.read(r, 64).split()[0])
    os.close(r)
    forking.reap(pid)
    stop = time.monotonic() + 3
    while pid_alive(worker) and time.monotonic() < stop:
        time.sleep(0.02)
    assert not pid_alive(worker)
