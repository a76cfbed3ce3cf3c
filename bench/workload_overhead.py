"""dolmen's GEMM and copy rates against a bare torch loop doing the same work, in the same
process run (not a test; the target is a ratio of at least 0.95). On the CPU both sides are
timed by this thread's CPU time with one torch thread (``--clock cpu``, the default there):
the machine is shared, and wall time measures the neighbours' load, not the loop.

    .venv/bin/python bench/workload_overhead.py [--device cpu|cuda] [--seconds S]
        [--pairs P] [--clock wall|cpu]

For each dtype the GEMM workload runs (fp32 and bf16 on the CPU; the KB's dtypes on a GPU)
and for the device copy, the bare loop builds the same operands with the same function
(``make_step``, ``make_copy``), warms up once, then times a fixed number of iterations
between two synchronisations. dolmen's figure is what ``gemm.run`` and ``memory.run``
report. The two sides alternate in ``--pairs`` pairs (which goes first alternates too);
each pair gives a ratio and the median ratio is printed, so that a neighbour's load on a
shared machine does not decide it. On a GPU only bf16 is compared (the KB's other dtypes
run the same loop).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from dolmen.workloads import engine, gemm, memory
from dolmen.workloads.model import Request


def bare(step: Callable[[], None], torch: Any, device: str, seconds: float) -> tuple[int, float]:
    """The loop anyone would write: warm up, then N steps between two synchronisations,
    N sized from the median of three timed steps so that the loop takes about ``seconds``."""
    step()
    engine.synchronize(torch, device)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        step()
        engine.synchronize(torch, device)
        times.append(time.perf_counter() - t0)
    n = max(3, int(seconds / max(statistics.median(times), 1e-9)))
    t0 = engine.CLOCK()
    for _ in range(n):
        step()
    engine.synchronize(torch, device)
    return n, engine.CLOCK() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default=None)
    parser.add_argument("--seconds", type=float, default=0.5, help="per dtype and side")
    parser.add_argument("--pairs", type=int, default=11)
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default=None,
        help="wall: perf_counter (the default on a GPU); cpu: this thread's CPU time with one "
        "torch thread (the default on the CPU: on a shared machine wall time measures the "
        "neighbours' load, not the loop)",
    )
    args = parser.parse_args()
    torch = engine.load_torch()
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    clock = args.clock or ("cpu" if device == "cpu" else "wall")
    if clock == "cpu":
        torch.set_num_threads(1)  # the matmul runs on this thread: its CPU time is the work
        engine.CLOCK = time.thread_time  # both sides: dolmen's loop and the bare one
    gpus = (0,) if device == "cuda" else ()
    dev = "cuda:0" if device == "cuda" else "cpu"
    ratios: dict[str, list[float]] = {}
    rates: dict[str, list[tuple[float, float]]] = {}
    for pair in range(args.pairs):
        # Alternate which side goes first: a neighbour's load drifts; a pair's ratio
        # cancels what is slow, the median across pairs what is noisy.
        for name, ours, theirs in _pair(torch, device, gpus, dev, args.seconds, pair % 2 == 1):
            ratios.setdefault(name, []).append(ours / theirs)
            rates.setdefault(name, []).append((ours, theirs))
        engine.free(torch)
    what = torch.cuda.get_device_name(0) if device == "cuda" else "CPU"
    print(
        f"device {device} ({what}), torch {torch.__version__}, {torch.get_num_threads()} "
        f"thread(s), {clock} clock, {args.pairs} interleaved pairs of {args.seconds:g} s a side"
    )
    for name, values in ratios.items():
        unit = "GB/s" if name == "copy" else "TFLOP/s"
        ours = statistics.median(o for o, _ in rates[name])
        theirs = statistics.median(t for _, t in rates[name])
        ratio = statistics.median(values)
        verdict = "ok" if ratio >= 0.95 else "BELOW 0.95"
        print(
            f"{name:<5} dolmen {ours:>11.5f} {unit:<7} bare {theirs:>11.5f} {unit:<7} "
            f"ratio {ratio:.3f} (pairs {min(values):.2f}-{max(values):.2f}) {verdict}"
        )


def _pair(
    torch: Any, device: str, gpus: tuple[int, ...], dev: str, seconds: float, bare_first: bool
) -> list[tuple[str, float, float]]:
    """One pair per figure: (name, dolmen's rate, the bare loop's rate)."""
    out: list[tuple[str, float, float]] = []
    sides: list[Callable[[], None]] = []
    got: dict[str, float] = {}
    mine: dict[str, float] = {}
    dtypes = gemm.CPU_DTYPES if device == "cpu" else ("bf16",)
    n = gemm.SIZES[(device, False)]
    size = memory.SIZES[(device, False)][0]

    def dolmen() -> None:
        g = gemm.run(Request(device=device, gpus=gpus, budget_s=seconds * len(dtypes), force=True))
        mine.update({e.dtype: e.tflops for e in g.entries})
        m = memory.run(Request(device=device, gpus=gpus, budget_s=seconds / 0.4, force=True))
        mine["copy"] = m.gpus[0].d2d_gbps

    def plain() -> None:
        for dtype in dtypes:
            k, secs = bare(gemm.make_step(torch, dev, dtype, n), torch, dev, seconds)
            got[dtype] = 2.0 * n**3 * k / secs / 1e12
        src = torch.empty(size, dtype=torch.uint8, device=dev).fill_(1)
        k, secs = bare(memory.make_copy(src, torch.empty_like(src)), torch, dev, seconds)
        got["copy"] = 2.0 * size * k / secs / 1e9

    sides = [plain, dolmen] if bare_first else [dolmen, plain]
    for side in sides:
        side()
    for name in (*dtypes, "copy"):
        if name in mine and got.get(name):
            out.append((name, mine[name], got[name]))
    return out


if __name__ == "__main__":
    main()
