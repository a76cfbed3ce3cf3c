"""First step of a small torch.compile'd convolution model: a cold TorchInductor cache
against a warm one, whole fresh processes, same run, same interpreter.

    .venv/bin/python bench/warm_cache.py [--runs N] [--device cpu|cuda]

What `[caches]` (docs/tune.md, "Warm compile caches") buys a job that ran before: its
first step loads the compiled graph (Inductor's FX graph cache, and on a GPU the Triton
kernels and the CUDA JIT cache) instead of generating and compiling it. Each run is a new
Python process with TORCHINDUCTOR_CACHE_DIR (and TRITON_CACHE_DIR, CUDA_CACHE_PATH) set:
"cold" gets an empty folder, "warm" the folder a previous cold run filled. Runs alternate
cold and warm. Printed: the median first-step time of each (import excluded: the step
only, torch.compile's tracing and compilation included), the median second step, and the
ratio cold/warm. On the CPU, Inductor writes C++ and compiles it with the system
compiler (gcc here); the GPU figure (Triton kernels, autotuning) needs a GPU
(``--device cuda``) and is not measured on a machine without one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time
import torch
torch.set_num_threads(1)
device = sys.argv[1]
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
    torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10),
).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
step_fn = torch.compile(model)
x = torch.randn(8, 3, 32, 32, device=device)
y = torch.randint(0, 10, (8,), device=device)
times = []
for _ in range(2):
    t0 = time.perf_counter()
    loss = torch.nn.functional.cross_entropy(step_fn(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    if device == "cuda":
        torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
print(json.dumps({"first": times[0], "second": times[1]}))
"""


def one(cache: Path, device: str) -> dict[str, float]:
    """A fresh process's step times with its caches in ``cache``."""
    env = {
        **os.environ,
        "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"),
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
        "TRITON_CACHE_DIR": str(cache / "triton"),
        "CUDA_CACHE_PATH": str(cache / "cuda"),
        "TORCHINDUCTOR_COMPILE_THREADS": "1",  # no worker pool: 2 shared cores here
    }
    out = subprocess.run(
        [sys.executable, "-c", CHILD, device],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"the compiled step failed:\n{out.stderr[-3000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)  # a cold run takes 30-50 s here
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args()
    cold: list[dict[str, float]] = []
    warm: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="dolmen-bench-cache-") as tmp:
        for i in range(args.runs):
            folder = Path(tmp) / f"c{i}"
            cold.append(one(folder, args.device))  # empty: compiles, fills the folder
            warm.append(one(folder, args.device))  # the folder the cold run filled
    c1 = statistics.median(r["first"] for r in cold)
    w1 = statistics.median(r["first"] for r in warm)
    c2 = statistics.median(r["second"] for r in cold)
    w2 = statistics.median(r["second"] for r in warm)
    print(f"{args.runs} cold and {args.runs} warm processes, alternating; medians ({args.device})")
    print(f"  first step, cold cache   {c1 * 1000:9.1f} ms")
    print(f"  first step, warm cache   {w1 * 1000:9.1f} ms")
    print(f"  second step (cold, warm) {c2 * 1000:9.1f} ms, {w2 * 1000:.1f} ms")
    print(f"cold/warm first step: {c1 / w1:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
