"""One GPU's clocks, power, temperature, clock-event reasons and PCIe link, sampled through
NVML in a worker process while a workload runs: the first source of the workloads'
sampler (``workloads.engine.Sampler``), before ``nvidia-smi --query-gpu``.

The rows have the sample model of ``nvidia-smi --query-gpu=<fields>
--format=csv,noheader,nounits``: field name -> the text nvidia-smi would print (``1980``,
``690.12``, ``0x0000000000000004``), None where NVML answers "not supported" or the like
(nvidia-smi's ``[N/A]``). A field NVML cannot read here is refused before the worker starts,
so the caller asks nvidia-smi instead.

The worker is a fresh interpreter (``python -m dolmen.host.gpu.nvml_sampler``), not a fork
as ``nvml_worker``'s one-shot read is: the sampling parent has CUDA and torch's threads up,
and a fork of such a process may deadlock in the child. It writes one JSON line per sample
to its stdout until that pipe closes or its parent goes, and never runs longer than its
``limit_s``. A driver that hangs blocks only the worker, which the parent kills on
``close()``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

Row = dict[str, str | None]

_CLOCK_SM = 1  # nvml.h NVML_CLOCK_SM
_TEMPERATURE_GPU = 0  # nvml.h NVML_TEMPERATURE_GPU
START_TIMEOUT = 20.0  # nvmlInit on a GPU without persistence mode initialises it: seconds
LIMIT_S = 3600.0  # the longest a worker samples, whatever its parent does


def _reasons(lib: Any, h: Any) -> str:
    """The active clock-event mask as nvidia-smi prints it; the driver renamed the call
    (ClocksThrottleReasons to ClocksEventReasons, nvidia-ml-py 12.535)."""
    fn = (
        getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None)
        or lib.nvmlDeviceGetCurrentClocksThrottleReasons
    )
    return f"0x{int(fn(h)):016X}"


def _integer(name: str, *args: int) -> Callable[[Any, Any], str]:
    return lambda lib, h: str(int(getattr(lib, name)(h, *args)))


# nvidia-smi field -> how NVML answers it, in nvidia-smi's nounits text.
READERS: Mapping[str, Callable[[Any, Any], str]] = {
    "clocks.sm": _integer("nvmlDeviceGetClockInfo", _CLOCK_SM),
    "power.draw": lambda lib, h: f"{int(lib.nvmlDeviceGetPowerUsage(h)) / 1000:.2f}",  # mW
    "temperature.gpu": _integer("nvmlDeviceGetTemperature", _TEMPERATURE_GPU),
    "clocks_event_reasons.active": _reasons,
    "clocks_throttle_reasons.active": _reasons,
    "pcie.link.gen.current": _integer("nvmlDeviceGetCurrPcieLinkGeneration"),
    "pcie.link.width.current": _integer("nvmlDeviceGetCurrPcieLinkWidth"),
    "pcie.link.gen.max": _integer("nvmlDeviceGetMaxPcieLinkGeneration"),
    "pcie.link.width.max": _integer("nvmlDeviceGetMaxPcieLinkWidth"),
}


def supports(fields: Sequence[str]) -> bool:
    """Whether NVML can answer every one of ``fields`` (``index`` is the GPU's own)."""
    return all(f == "index" or f in READERS for f in fields)


def sample_row(lib: Any, handle: Any, index: int, fields: Sequence[str]) -> Row:
    """One sample of ``fields``: a value NVML does not give (an error of any kind, a
    function this nvidia-ml-py lacks) is None, as nvidia-smi's ``[N/A]`` parses."""
    row: Row = {}
    for field in fields:
        if field == "index":
            row[field] = str(index)
            continue
        try:
            row[field] = READERS[field](lib, handle)
        except Exception:  # NVMLError_*, AttributeError: the sample lacks this value
            row[field] = None
    return row


def stream(
    lib: Any,
    index: int,
    fields: Sequence[str],
    every_s: float,
    write: Callable[[str], None],
    *,
    limit_s: float = LIMIT_S,
    alive: Callable[[], bool] = lambda: True,
) -> None:
    """The worker's life: ``ready`` (or ``error <why>``), then one JSON row per ``every_s``
    until ``write`` fails (the parent closed the pipe), ``alive()`` says no, or ``limit_s``."""
    try:
        lib.nvmlInit()
        handle = lib.nvmlDeviceGetHandleByIndex(index)
    except Exception as e:
        write(f"error not loaded: {e}\n")
        return
    end = time.monotonic() + limit_s
    try:
        write("ready\n")
        while alive() and time.monotonic() < end:
            write(json.dumps(sample_row(lib, handle, index, fields)) + "\n")
            time.sleep(every_s)
    except OSError:  # EPIPE: the parent is done with us
        pass
    finally:
        with contextlib.suppress(Exception):
            lib.nvmlShutdown()


class NvmlStream:
    """A running worker; ``read()`` the rows it sent so far, ``close()`` it when done."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self._proc = proc
        self._buf = b""

    @property
    def pid(self) -> int:
        """The worker's process id."""
        return self._proc.pid

    def read(self, timeout: float) -> list[Row] | None:
        """The rows that arrived within ``timeout`` s; None once the worker has ended."""
        out = self._proc.stdout
        assert out is not None
        ready, _, _ = select.select([out], [], [], timeout)
        if not ready:
            return []
        chunk = os.read(out.fileno(), 1 << 16)
        if not chunk:
            return None
        self._buf += chunk
        lines, _, self._buf = self._buf.rpartition(b"\n")
        return [r for r in (parse_line(x) for x in lines.split(b"\n")) if r is not None]

    def close(self) -> None:
        """End the worker and reap it."""
        with contextlib.suppress(OSError):
            if self._proc.stdout is not None:
                self._proc.stdout.close()
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(2.0)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._proc.wait(2.0)


def parse_line(line: bytes) -> Row | None:
    """One worker row (a JSON object of strings or nulls); None for anything else."""
    try:
        row = json.loads(line)
    except ValueError:
        return None
    if not isinstance(row, dict):
        return None
    return {str(k): (v if isinstance(v, str) else None) for k, v in row.items()}


def open_sampler(kind: str, index: int, fields: Sequence[str], every_s: float) -> NvmlStream | str:
    """A started worker sampling GPU ``index``, or why NVML cannot: a host that is not
    live (``kind``), a field NVML has no reader for, no nvidia-ml-py, no libnvidia-ml."""
    if kind != "live":
        return "not sampled on a recorded host: NVML reads the machine dolmen runs on"
    if not supports(fields):
        missing = [f for f in fields if f != "index" and f not in READERS]
        return f"not supported: no NVML reader for {', '.join(missing)}"
    loaded = _load()
    if loaded:
        return loaded
    argv = [sys.executable, "-m", __name__, str(index), f"{every_s:g}", ",".join(fields)]
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
    except OSError as e:
        return f"unreadable: NVML sampler did not start: {e}"
    got = NvmlStream(proc)
    first = _first_line(proc.stdout, START_TIMEOUT)
    if first == "ready":
        return got
    got.close()
    if first is None:
        return f"timed out after {START_TIMEOUT:g} s waiting on NVML (nvmlInit)"
    return first.removeprefix("error ") or "unreadable: NVML sampler ended without a word"


def _load() -> str:
    """ "" where libnvidia-ml loads (a dlopen, no driver call), else why not."""
    try:
        import pynvml
    except ImportError:
        return "not loaded: nvidia-ml-py is not installed"
    from dolmen.host.gpu.nvml_worker import load_library

    return load_library(pynvml)


def _first_line(out: IO[bytes] | None, timeout: float) -> str | None:
    """The worker's first line (``ready`` or ``error ...``); None when none came in time."""
    assert out is not None
    end, buf = time.monotonic() + timeout, b""
    while b"\n" not in buf:
        left = end - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([out], [], [], left)
        if not ready:
            return None
        chunk = os.read(out.fileno(), 1)  # one byte at a time: the rows stay in the pipe
        if not chunk:
            return buf.decode(errors="replace").strip()
        buf += chunk
    return buf.decode(errors="replace").strip()


def main(argv: Sequence[str]) -> int:  # pragma: no cover - the worker process
    """``python -m dolmen.host.gpu.nvml_sampler INDEX EVERY_S FIELD,FIELD...``."""
    import pynvml

    index, every_s, fields = int(argv[0]), float(argv[1]), argv[2].split(",")
    parent = os.getppid()
    out = sys.stdout.buffer

    def write(text: str) -> None:
        out.write(text.encode())
        out.flush()

    stream(pynvml, index, fields, every_s, write, alive=lambda: os.getppid() == parent)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
