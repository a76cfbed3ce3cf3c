"""The code of one collective rank, in its own spawned process (see ``collective``).

A rank ignores SIGINT (its parent owns Ctrl-C and ends the ranks), silences its own stdout
and stderr (they would tear the parent's progress bar; failures travel on the queue), and
leaves on its own when its parent dies or the hard deadline passes, so that a killed
``dolmen`` leaves no rank behind. Every rank takes part in every size; before each one
(after an op's first) the ranks agree (an all_reduce of a flag) whether the soft deadline
has passed, so that they stop together rather than leave one waiting in a collective.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import traceback
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from dolmen.frozen import frozen

WATCHDOG_EXIT = 3  # a rank's exit code when its watchdog ended it


@frozen
class Job:
    """What every rank runs: the sizes per op, the sweep's budget and the hard deadline
    (``time.monotonic``: one clock for every process of the machine). ``start``: when the
    budget began (the parent's start, so spawning, torch's import and the rendezvous are
    inside it); None: at the rendezvous (ranks on several nodes share no clock)."""

    world: int
    backend: str  # "nccl" | "gloo"
    gpus: tuple[int, ...]  # CUDA device of each rank; empty on cpu
    port: int
    sizes: Mapping[str, list[int]]
    budget_s: float
    hard: float
    warmup: int
    iters: int
    addr: str = "127.0.0.1"  # the rendezvous: rank 0's host (another node's name across nodes)
    start: float | None = None


def main(rank: int, job: Job, outbox: Any) -> None:
    """A spawned local rank's life: quiet, deaf to Ctrl-C, then ``run``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _silence()
    if run(rank, job, outbox):
        raise SystemExit(1)


def run(rank: int, job: Job, outbox: Any) -> int:
    """Watchdog, rendezvous, the sweeps, then a ``done`` or ``error`` message on ``outbox``
    (anything with ``put``); the rank's exit code. A rank of a multi-node run
    (``collective_task``) lives this part too."""
    _watchdog(os.getppid(), job.hard)
    try:
        stopped = _sweep(rank, job, outbox)
    except BaseException as e:
        last = traceback.format_exception_only(type(e), e)[-1].strip()
        outbox.put(("error", rank, last))
        return 1
    outbox.put(("done", rank, stopped))
    return 0


def _sweep(rank: int, job: Job, outbox: Any) -> str | None:
    import torch
    import torch.distributed as dist

    if job.backend == "nccl":
        torch.cuda.set_device(job.gpus[rank])
        device = torch.device("cuda", job.gpus[rank])
    else:
        device = torch.device("cpu")
    left = max(1.0, job.hard - time.monotonic())
    dist.init_process_group(
        job.backend,
        init_method=f"tcp://{job.addr}:{job.port}",
        rank=rank,
        world_size=job.world,
        timeout=timedelta(seconds=left),
    )
    met = time.monotonic()
    end = (met if job.start is None else job.start) + job.budget_s
    stopped: str | None = None
    try:
        for k, (op, sizes) in enumerate(job.sizes.items()):
            # Op k of n may run until (k+1)/n of what the rendezvous left of the budget:
            # all_gather keeps its share when all_reduce uses all of its own, and gets
            # what all_reduce left.
            soft = met + (end - met) * (k + 1) / len(job.sizes)
            time_us = 0.0
            for i, nbytes in enumerate(sizes):
                # The first size of each op always runs: a budget shorter than the
                # rendezvous (a smoke run's) still measures something. A later one runs
                # only if it would end in time, at the last size's pace for its bytes
                # (the slowest rank's: every rank computes the same figure).
                need = time_us * 1e-6 * (job.warmup + job.iters) * nbytes / sizes[i - 1]
                if i and _past(torch, dist, device, soft - need):
                    stopped = stopped or f"budget reached before {op} at {nbytes} bytes"
                    break
                time_us = _time(torch, dist, device, op, nbytes, job)
                if rank == 0:
                    outbox.put(("point", op, nbytes, time_us))
    finally:
        dist.destroy_process_group()
    return stopped


def _past(torch: Any, dist: Any, device: Any, soft: float) -> bool:
    """Whether any rank is past the soft deadline (every rank gets the same answer)."""
    flag = torch.tensor([1.0 if time.monotonic() > soft else 0.0], device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item() > 0)


def _time(torch: Any, dist: Any, device: Any, op: str, nbytes: int, job: Job) -> float:
    """Mean microseconds per ``op`` of ``nbytes``: the slowest rank's, after warm-up."""
    count = nbytes // 4
    if op == "all_reduce":
        buf = torch.ones(count, dtype=torch.float32, device=device)

        def step() -> None:
            dist.all_reduce(buf)

    else:
        out = torch.empty(count, dtype=torch.float32, device=device)
        share = torch.ones(count // job.world, dtype=torch.float32, device=device)

        def step() -> None:
            dist.all_gather_into_tensor(out, share)

    for _ in range(job.warmup):
        step()
    _sync(torch, device)
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(job.iters):
        step()
    _sync(torch, device)
    mean = torch.tensor([(time.perf_counter() - t0) / job.iters * 1e6], device=device)
    dist.all_reduce(mean, op=dist.ReduceOp.MAX)
    return float(mean.item())


def _sync(torch: Any, device: Any) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _silence() -> None:
    """Point fds 1 and 2 at /dev/null (NCCL and gloo write there; the parent draws a bar)."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)


def _watchdog(parent: int, hard: float) -> None:
    """Leave at once when the parent is gone (re-parented) or the hard deadline passed."""

    def watch() -> None:
        while True:
            if os.getppid() != parent or time.monotonic() > hard:
                os._exit(WATCHDOG_EXIT)
            time.sleep(0.5)

    threading.Thread(target=watch, name="dolmen-watchdog", daemon=True).start()
