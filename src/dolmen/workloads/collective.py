"""NCCL-style all_reduce and all_gather across the node's GPUs, through torch.distributed.

One process per GPU (nccl backend) on ``cuda``; on ``cpu`` two processes with gloo, so the
machinery (spawn, rendezvous, timing, teardown) is exercised for real where there is no GPU
(the figure then says nothing of a GPU and no GPU threshold applies). The processes are
started with torch.multiprocessing's ``spawn`` (never fork: CUDA does not survive a fork),
meet on 127.0.0.1 at a free port, and run the sizes of ``nccl-tests``' default sweep
(``-b 8 -e 1G -f 2``, float32); ``collective_worker`` is their code.

Sizes follow nccl-tests' convention: ``bytes`` is the all_reduce buffer, and for all_gather
the gathered (output) buffer, whose per-rank share is ``bytes / world``. Time per size is
the slowest rank's mean over the timed iterations. Bandwidths (GB/s = 1e9 B/s) are
nccl-tests' PERFORMANCE.md: ``algbw = bytes / time``; ``busbw`` corrects it to the link
traffic the algorithm needs, ``2(n-1)/n`` for all_reduce and ``(n-1)/n`` for all_gather,
which makes it comparable with the hardware's bandwidth whatever the rank count.

Teardown: a hard deadline (the budget plus a grace) and Ctrl-C both end every rank (SIGTERM,
then SIGKILL) before this returns or raises; ranks ignore SIGINT (the parent owns Ctrl-C)
and exit on their own when their parent disappears (a watchdog thread), so no rank outlives
a run. Across nodes, ``collective_task`` is a rank that Slurm starts (``dolmen fleet
collective --slurm``); it runs the same sweep through ``collective_worker.run``.
"""

from __future__ import annotations

import contextlib
import queue as queue_mod
import time
from collections.abc import Sequence
from typing import Any

from dolmen.frozen import frozen
from dolmen.host.process import free_port
from dolmen.workloads.applicable import NotApplicable
from dolmen.workloads.model import Aborted, Request, Unavailable

OPS = ("all_reduce", "all_gather")
ELEMENT = 4  # float32, nccl-tests' default -d float
FULL_SIZES = tuple(8 << i for i in range(28))  # 8 B .. 1 GiB, doubling
SMOKE_SIZES = (8, 1024, 65536)
CPU_MAX_BYTES = 64 << 20  # gloo on a CPU: larger sizes take seconds each and say nothing new
CPU_WORLD = 2
# Past the budget before the ranks are killed: the first size of each op, which always runs,
# and the teardown. The budget counts from the start (spawn, torch's import, the rendezvous).
GRACE_S = 5.0
# Across nodes the budget begins at the rendezvous (the nodes share no clock): the grace
# there also covers srun's start, torch's import and the rendezvous itself.
NODES_GRACE_S = 30.0
WARMUP, ITERS = 5, 20  # nccl-tests' -w 5 -n 20
SMOKE_WARMUP, SMOKE_ITERS = 1, 3

_BUS_FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n}


def bus_factor(op: str, world: int) -> float:
    """nccl-tests' busbw/algbw factor of ``op`` on ``world`` ranks (PERFORMANCE.md)."""
    if world < 1:
        raise ValueError(f"world must be at least 1, not {world}")
    try:
        return float(_BUS_FACTOR[op](world))
    except KeyError:
        raise ValueError(f"unknown op {op!r}; valid ops: {', '.join(OPS)}") from None


def bandwidths(op: str, nbytes: int, time_us: float, world: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s of one size: ``bytes / time`` and its bus correction."""
    if time_us <= 0:
        raise ValueError(f"time must be positive, not {time_us}")
    algbw = nbytes / (time_us * 1e-6) / 1e9
    return algbw, algbw * bus_factor(op, world)


def sizes_for(op: str, world: int, sizes: Sequence[int]) -> list[int]:
    """The sizes ``op`` can run on ``world`` ranks: all_gather's output buffer must split
    into ``world`` whole float32 shares (nccl-tests rounds the same way), so it starts at
    ``4 * world`` bytes; a size that rounds onto another is run once."""
    step = ELEMENT * (world if op == "all_gather" else 1)
    out = [s // step * step for s in sizes if s >= step]
    return list(dict.fromkeys(out))


@frozen
class Point:
    """One message size: mean time per operation and its two bandwidths (GB/s)."""

    bytes: int
    time_us: float
    algbw_gbps: float
    busbw_gbps: float


@frozen
class Run:
    """One op over every size it reached within the budget."""

    op: str
    world: int
    backend: str
    points: tuple[Point, ...]

    @property
    def largest(self) -> Point | None:
        """The largest size measured: the one the hardware figures are compared with."""
        return max(self.points, key=lambda p: p.bytes, default=None)


@frozen
class CollectiveResult:
    """Both ops' sweeps; ``device`` and ``gpus`` say what ran them."""

    device: str
    gpus: tuple[int, ...]
    runs: tuple[Run, ...]
    stopped: str | None = None  # why the sweep ended before the last size (the budget)

    def run(self, op: str) -> Run | None:
        """The sweep of ``op``, if it ran."""
        return next((r for r in self.runs if r.op == op), None)

    def to_json(self) -> dict[str, Any]:
        """docs/validate-full.md's ``collective`` shape (plus ``device``, ``stopped``)."""
        return {
            "device": self.device,
            "gpus": list(self.gpus),
            "stopped": self.stopped,
            "runs": [
                {
                    "op": r.op,
                    "world": r.world,
                    "backend": r.backend,
                    "points": [
                        {
                            "bytes": p.bytes,
                            "time_us": p.time_us,
                            "algbw_gbps": p.algbw_gbps,
                            "busbw_gbps": p.busbw_gbps,
                        }
                        for p in r.points
                    ],
                }
                for r in self.runs
            ],
        }


def plan(request: Request) -> tuple[int, str, tuple[int, ...], tuple[int, ...]]:
    """(world, backend, GPUs, sizes) of a request; Unavailable where it cannot run."""
    gpus: tuple[int, ...] = ()
    if request.device == "cpu":
        world, backend, cap = CPU_WORLD, "gloo", CPU_MAX_BYTES
    elif request.device == "cuda":
        gpus = tuple(request.gpus)
        if len(gpus) < 2:
            raise NotApplicable(
                f"a collective needs two GPUs or more; this run has {len(gpus)} "
                "(across nodes: dolmen fleet collective --slurm)"
            )
        world, backend, cap = len(gpus), "nccl", FULL_SIZES[-1]
    else:
        raise Unavailable(f"unknown device {request.device!r}; valid devices: cpu, cuda")
    sizes = SMOKE_SIZES if request.smoke else tuple(s for s in FULL_SIZES if s <= cap)
    return world, backend, gpus, sizes


def run(request: Request, grace_s: float = GRACE_S) -> CollectiveResult:
    """Run both sweeps, one process per rank (module docstring); ``grace_s``: how long past
    the budget the ranks may take before they are killed."""
    world, backend, gpus, sizes = plan(request)
    from dolmen.workloads.engine import load_torch

    torch = load_torch()
    if backend == "nccl" and not torch.distributed.is_nccl_available():
        raise Unavailable("this torch was built without NCCL: install a CUDA build of torch")
    from dolmen.workloads import collective_worker as worker

    todo = {op: sizes_for(op, world, sizes) for op in OPS}
    total = sum(len(v) for v in todo.values())
    started = time.monotonic()
    # The budget is the whole workload's, from here: spawning and importing torch (seconds
    # on a busy CPU) and the rendezvous are in it; past it and the grace, the ranks are
    # killed.
    hard = started + request.budget_s + grace_s
    ctx = torch.multiprocessing.get_context("spawn")
    inbox = ctx.Queue()
    port = free_port()
    warm, iters = (SMOKE_WARMUP, SMOKE_ITERS) if request.smoke else (WARMUP, ITERS)
    job = worker.Job(
        world, backend, gpus, port, todo, request.budget_s, hard, warm, iters, start=started
    )
    procs = [
        ctx.Process(target=worker.main, args=(r, job, inbox), daemon=True) for r in range(world)
    ]
    points: dict[str, list[Point]] = {op: [] for op in OPS}
    done: set[int] = set()
    stopped: str | None = None
    try:
        for p in procs:
            p.start()
        while len(done) < world:
            try:
                msg = inbox.get(timeout=0.2)
            except queue_mod.Empty:
                late = time.monotonic() > hard
                if late or any(p.exitcode == worker.WATCHDOG_EXIT for p in procs):
                    over = (
                        f"the collective did not finish within its budget of "
                        f"{request.budget_s:g} s (+{grace_s:g} s grace): {_stuck(procs, done)}"
                    )
                    if not any(points.values()):
                        raise Unavailable(over) from None
                    stopped = f"{over}, after {_reached(points)}"  # what it measured stands
                    break
                _check_alive(procs, done)
                continue
            kind = msg[0]
            if kind == "point":
                _, op, nbytes, time_us = msg
                points[op].append(Point(nbytes, time_us, *bandwidths(op, nbytes, time_us, world)))
                got = sum(len(v) for v in points.values())
                elapsed = time.monotonic() - started
                request.progress("collective", got / total, elapsed * (total - got) / got)
            elif kind == "done":
                done.add(msg[1])
                stopped = stopped or msg[2]
            elif kind == "error":
                raise Unavailable(f"rank {msg[1]} failed: {msg[2]}")
    except KeyboardInterrupt:
        raise Aborted("collective") from None
    finally:
        end(procs)
        with contextlib.suppress(Exception):
            inbox.close()
    runs = tuple(Run(op, world, backend, tuple(points[op])) for op in OPS if points[op])
    return CollectiveResult(request.device, gpus, runs, stopped)


def _check_alive(procs: Sequence[Any], done: set[int]) -> None:
    for rank, p in enumerate(procs):
        if rank not in done and p.exitcode is not None:
            raise Unavailable(f"rank {rank} exited with code {p.exitcode} before it finished")


def _reached(points: dict[str, list[Point]]) -> str:
    """How far the sweep got: "all_reduce to 65536 bytes, all_gather to 1024 bytes"."""
    return ", ".join(f"{op} to {got[-1].bytes} bytes" for op, got in points.items() if got)


def _stuck(procs: Sequence[Any], done: set[int]) -> str:
    left = [str(r) for r in range(len(procs)) if r not in done]
    return f"rank {', '.join(left)} still running, ended"


def end(procs: Sequence[Any], wait_s: float = 3.0) -> None:
    """End every rank still alive: SIGTERM, then SIGKILL after ``wait_s``; reap them all."""
    for p in procs:
        if p.pid is not None and p.exitcode is None:
            p.terminate()
    limit = time.monotonic() + wait_s
    for p in procs:
        if p.pid is not None:
            p.join(max(0.0, limit - time.monotonic()))
    for p in procs:
        if p.pid is not None and p.exitcode is None:
            p.kill()
            p.join(5.0)
