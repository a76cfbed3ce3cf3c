"""The engine under every workload: torch loaded lazily, the device chosen, the busy-GPU
guard, timed loops with progress, and Ctrl-C turned into ``Aborted`` with memory freed.

Torch is imported here and only when a workload runs (3 s and hundreds of MB: a quick or
standard run never pays it). ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` is set first, so CUDA device
``i`` is nvidia-smi's GPU ``i`` (CUDA's default order is fastest first).

Which processes use a GPU is read through the host (``nvidia-smi --query-compute-apps``):
only ``dolmen.host`` runs commands. The parsers are pure and tested with tables.
"""

from __future__ import annotations

import gc
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from dolmen.host import Host
from dolmen.workloads.model import Aborted, Request, Unavailable

TORCH_REMEDY = (
    "torch is not installed: pip install torch (a CUDA build on a GPU host), or run dolmen "
    "inside the NGC PyTorch container the driver supports (dolmen kb ngc)"
)
# The clock of the timed loops: wall time (what a user waits for). bench/workload_overhead.py
# swaps in thread CPU time on a shared CPU, where wall time measures the neighbours.
CLOCK: Callable[[], float] = time.perf_counter
WARMUP_STEPS = 3
APPS_ARGV = (
    "nvidia-smi",
    "--query-compute-apps=pid,process_name,gpu_bus_id",
    "--format=csv,noheader",
)
INDEX_ARGV = ("nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader")


def load_torch() -> Any:
    """The torch module, or Unavailable with the remedy; CUDA enumerates in PCI order."""
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    try:
        import torch
    except ImportError:
        raise Unavailable(TORCH_REMEDY) from None
    return torch


def cuda_devices(torch: Any, request: Request) -> tuple[int, ...]:
    """The request's GPUs, each one torch can open; Unavailable where CUDA cannot."""
    if not torch.cuda.is_available():
        build = getattr(torch.version, "cuda", None)
        why = "this torch has no CUDA" if build is None else "torch sees no CUDA device"
        raise Unavailable(f"{why}: install a CUDA build of torch, or --device cpu")
    count = int(torch.cuda.device_count())
    wanted = request.gpus or tuple(range(count))
    gone = [g for g in wanted if g >= count]
    if gone:
        raise Unavailable(
            f"CUDA sees {count} GPU(s), not GPU {', '.join(map(str, gone))}: "
            "check CUDA_VISIBLE_DEVICES"
        )
    return wanted


def parse_bus_index(text: str) -> dict[str, int]:
    """``nvidia-smi --query-gpu=index,pci.bus_id`` CSV: bus id (upper case) -> index."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit() and parts[1]:
            out[parts[1].upper()] = int(parts[0])
    return out


def parse_apps(text: str) -> list[tuple[int, str, str]]:
    """``--query-compute-apps=pid,process_name,gpu_bus_id`` CSV: (pid, name, bus id).

    A name may hold commas (a path with arguments), so pid is the first field and the bus
    id the last; lines that are not rows ("No running processes found", junk) are left out.
    """
    out: list[tuple[int, str, str]] = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3 or not parts[0].isdigit() or ":" not in parts[-1]:
            continue
        out.append((int(parts[0]), ",".join(parts[1:-1]).strip(), parts[-1].upper()))
    return out


def busy(host: Host, gpus: Sequence[int], me: int | None = None) -> dict[int, str] | str:
    """GPU index -> "pid 1234 (python)" for each GPU another process uses; a string when
    that cannot be told (then nothing says the GPUs are free)."""
    me = os.getpid() if me is None else me
    index = host.run(INDEX_ARGV, timeout=30.0)
    apps = host.run(APPS_ARGV, timeout=30.0)
    for result in (index, apps):
        if not result.ok:
            return result.failure()
    where = parse_bus_index(index.stdout)
    out: dict[int, str] = {}
    for pid, name, bus in parse_apps(apps.stdout):
        gpu = where.get(bus)
        if pid == me or gpu is None or gpu not in gpus:
            continue
        label = os.path.basename(name.split()[0]) if name.split() else "?"
        out[gpu] = f"{out[gpu]}, " if gpu in out else ""
        out[gpu] += f"pid {pid} ({label})"
    return out


def guard(host: Host, request: Request) -> None:
    """Unavailable when a requested GPU is in use by another process (unless ``force``),
    or when that cannot be read: a workload beside a training job spoils both."""
    if request.device != "cuda" or request.force:
        return
    found = busy(host, request.gpus)
    if isinstance(found, str):
        raise Unavailable(f"could not tell whether the GPUs are free ({found}): --force to run")
    if found:
        gpu, who = sorted(found.items())[0]
        more = f" (and {len(found) - 1} other GPU(s))" if len(found) > 1 else ""
        raise Unavailable(f"GPU {gpu} is in use by {who}{more}: --force to run anyway")


def synchronize(torch: Any, device: str) -> None:
    """Wait for queued kernels: a CUDA timing without it measures the launch only.
    ``device`` may list several ("cuda:0,cuda:1": a peer copy runs on both)."""
    for one in device.split(","):
        if one.startswith("cuda"):
            torch.cuda.synchronize(one)


def free(torch: Any) -> None:
    """Give the memory back: Python's references first, then CUDA's cache."""
    gc.collect()
    if torch is not None and torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


@contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """Inside, SIGTERM stops the workloads as Ctrl-C does (``KeyboardInterrupt``, then
    ``Aborted``, exit 130): scancel, ``systemctl stop`` and timeout(1) send SIGTERM, and
    dying of it would leave a command in its own session (fio writing for minutes) and its
    file on the scratch mount. Outside the main thread Python sets no handler: unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextmanager
def abortable(torch: Any, name: str) -> Iterator[None]:
    """Ctrl-C inside becomes ``Aborted`` after the memory is freed; memory is freed on any
    exit, so the next workload starts with an empty GPU."""
    try:
        yield
    except KeyboardInterrupt:
        free(torch)
        raise Aborted(name) from None
    finally:
        free(torch)


def timed(
    step: Callable[[], None],
    *,
    torch: Any,
    device: str,
    seconds: float,
    label: str,
    progress: Callable[[str, float, float | None], None],
    min_iters: int = 3,
    max_iters: int = 1_000_000,
) -> tuple[int, float]:
    """Run ``step`` for about ``seconds`` after a warm-up; (iterations, elapsed s).

    The warm-up is at least ``WARMUP_STEPS`` steps and 5% of the budget: on fresh operands
    (page faults, cold caches, a GPU's clocks ramping up) the first iterations are not what
    the device does once it runs. Iterations then go in
    batches timed between synchronisations, so the clock is read only when the device is
    idle; the batch doubles until it takes a tenth of the budget. The warm-up is inside
    ``seconds``, and a batch never runs past what is left of it (at the last batch's pace),
    so the loop ends within its budget once it has ``min_iters``.
    """
    begin, warm = CLOCK(), 0
    while warm < WARMUP_STEPS or CLOCK() - begin < seconds * 0.05:
        step()
        synchronize(torch, device)
        warm += 1
    measure = max(seconds - (CLOCK() - begin), 0.0)
    done, elapsed, batch = 0, 0.0, 1
    while done < max_iters and (elapsed < measure or done < min_iters):
        t0 = CLOCK()
        for _ in range(batch):
            step()
        synchronize(torch, device)
        took = CLOCK() - t0
        done += batch
        elapsed += took
        progress(label, min(elapsed / measure, 1.0) if measure > 0 else 1.0, None)
        grown = batch * 2 if took < seconds / 10 else batch
        fits = int((measure - elapsed) / (took / batch)) if took > 0 else grown
        batch = max(min(grown, fits, max_iters - done), 1)
    return done, elapsed


def parse_query(text: str, fields: Sequence[str]) -> list[dict[str, str | None]]:
    """``nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits`` rows: field -> text,
    None for "[N/A]", "[Not Supported]" and the like; rows of another width are left out."""
    rows: list[dict[str, str | None]] = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != len(fields) or not parts[0]:
            continue
        rows.append({f: (None if p.startswith("[") or not p else p) for f, p in zip(fields, parts)})
    return rows


def number(text: str | None) -> float | None:
    """A sample's number (hex masks included), None where it is not one."""
    if text is None:
        return None
    try:
        return float(int(text, 16)) if text.lower().startswith("0x") else float(text)
    except ValueError:
        return None


class Sampler:
    """Samples ``fields`` of GPU ``gpu`` every ``every_s`` in a thread while a workload runs:
    ``with Sampler(...) as s: ...; s.rows``.

    The first source is NVML, in a worker process ``dolmen.host`` starts (only it may load
    NVML); where NVML cannot answer (not a live host, no libnvidia-ml, no nvidia-ml-py) the
    host runs ``nvidia-smi --query-gpu`` once per sample, as a host tree replays it. Both
    give the same rows (field -> nvidia-smi's nounits text). ``fields`` is a list of
    alternatives (newer field names first: the driver renamed clocks_throttle_reasons to
    clocks_event_reasons); the first that the source accepts is kept. ``source`` says which
    source sampled ("nvml", "nvidia-smi"; "" when none did) and ``why`` why nothing was
    sampled, each source's reason (the samples are then absent, not zero).
    """

    def __init__(
        self, host: Host, gpu: int, fields: Sequence[Sequence[str]], every_s: float = 0.5
    ) -> None:
        self.host, self.gpu, self.choices, self.every_s = host, gpu, list(fields), every_s
        self.rows: list[dict[str, str | None]] = []
        self.why = ""
        self.source = ""
        self._stop: Any = None
        self._thread: Any = None

    def _argv(self, fields: Sequence[str]) -> tuple[str, ...]:
        return (
            "nvidia-smi",
            f"--query-gpu={','.join(fields)}",
            "--format=csv,noheader,nounits",
            f"--id={self.gpu}",
        )

    def _loop(self) -> None:
        nvml = self._nvml()
        if not nvml:
            return
        self.why = f"nvml: {nvml}"
        while not self._stop.is_set():
            for fields in list(self.choices):
                got = self.host.run(self._argv(fields), timeout=10.0)
                if got.ok:
                    self.choices = [fields]
                    self.source = "nvidia-smi"
                    self.rows.extend(parse_query(got.stdout, fields))
                    break
                self.why = f"nvml: {nvml}; nvidia-smi: {got.failure()}"
            else:
                return  # no form of the query works here: stop asking
            self._stop.wait(self.every_s)

    def _nvml(self) -> str:
        """Sample through NVML until stopped: "" once it did, else why it could not."""
        from dolmen.host.gpu.nvml_sampler import open_sampler, supports

        fields = next((f for f in self.choices if supports(f)), self.choices[0])
        stream = open_sampler(self.host.kind, self.gpu, fields, self.every_s)
        if isinstance(stream, str):
            return stream
        self.source = "nvml"
        try:
            while not self._stop.is_set():
                rows = stream.read(timeout=self.every_s)
                if rows is None:
                    break
                self.rows.extend(rows)
        finally:
            stream.close()
        return ""

    def __enter__(self) -> Sampler:
        import threading

        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="dolmen-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=15.0)

    def series(self, field: str) -> list[float]:
        """The numbers sampled for ``field`` (those that were numbers)."""
        return [v for r in self.rows if (v := number(r.get(field))) is not None]
