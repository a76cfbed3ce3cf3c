"""A short GEMM benchmark that runs inside any image holding Python and torch: pure.

Stock NGC images have no dolmen inside, so the benchmark is a Python one-liner run with
the image's own ``python3``: square matmuls (``2 n^3`` flops each) timed for about a
second per device, bf16 at n=8192 on each GPU (the size ``dolmen bench`` uses to reach
the tensor-core peak), fp32 at n=512 on the CPU. It prints one line,
``DOLMEN-BENCH {json}``, whatever happens (NGC's entrypoint prints a banner first, so
the line is found by its mark), and exits 0 when it measured, 3 when the image has no
torch, 4 when torch sees no GPU. ``parse`` reads that output back.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

MARK = "DOLMEN-BENCH "
NO_TORCH = 3
NO_GPU = 4
# What docker and podman return when the command could not start in the container
# (docker run(1), podman-run(1) "Exit Status"): 126 not executable, 127 not found.
NOT_EXECUTABLE, NOT_FOUND = 126, 127
PYTHON = "python3"  # the NGC images and Debian/Ubuntu bases name it so; not every has `python`
DEVICES = ("cuda", "cpu")

SCRIPT = """\
import json,sys,time
dev=sys.argv[1];out={"device":dev}
def say(code):
 print("DOLMEN-BENCH "+json.dumps(out),flush=True);sys.exit(code)
try:
 import torch
except Exception as e:
 out["missing"]="torch";out["error"]=type(e).__name__+": "+str(e);say(3)
out["torch"]=torch.__version__;out["cuda"]=torch.version.cuda
if dev=="cuda" and not torch.cuda.is_available():
 out["missing"]="gpu";out["error"]="torch.cuda.is_available() is False";say(4)
ids=list(range(torch.cuda.device_count())) if dev=="cuda" else [None]
n,dt,name,r=(8192,torch.bfloat16,"bf16",10) if dev=="cuda" else (512,torch.float32,"fp32",1)
out["runs"]=[]
for i in ids:
 d=torch.device("cpu") if i is None else torch.device("cuda",i)
 sync=(lambda:None) if i is None else (lambda:torch.cuda.synchronize(d))
 a=torch.randn(n,n,device=d,dtype=dt);b=torch.randn(n,n,device=d,dtype=dt)
 a@b;sync();k=0;t0=time.perf_counter()
 while True:
  for _ in range(r):c=a@b
  sync();k+=r;s=time.perf_counter()-t0
  if s>=1.0:break
 label="cpu" if i is None else torch.cuda.get_device_name(i)
 out["runs"].append({"gpu":i,"name":label,"dtype":name,"n":n,"iterations":k,"seconds":s,
  "tflops":2.0*n**3*k/s/1e12})
say(0)
"""


def command(device: str) -> tuple[str, ...]:
    """The command to run in the image for ``device`` (cuda or cpu)."""
    if device not in DEVICES:
        raise ValueError(f"device {device!r}: one of {', '.join(DEVICES)}")
    return (PYTHON, "-c", SCRIPT, device)


@dataclass(frozen=True)
class Run:
    """One device's GEMM: ``gpu`` is the CUDA index in the container (None: the CPU)."""

    gpu: int | None
    name: str
    dtype: str
    n: int
    iterations: int
    seconds: float
    tflops: float


@dataclass(frozen=True)
class Smoke:
    """What the benchmark said: ``runs`` when it measured, else ``missing`` (``torch``,
    ``gpu``) or ``error`` says why not. ``error`` alone: the output could not be read."""

    runs: tuple[Run, ...] = ()
    device: str | None = None
    torch: str | None = None
    cuda: str | None = None
    missing: str | None = None
    error: str | None = None


def _run(item: Any) -> Run:
    """One entry of ``runs``; ValueError naming the first bad field."""
    if not isinstance(item, Mapping):
        raise ValueError("a run is not an object")
    gpu = item.get("gpu")
    if gpu is not None and (not isinstance(gpu, int) or isinstance(gpu, bool) or gpu < 0):
        raise ValueError(f"gpu {gpu!r} is not an index")
    values: dict[str, float] = {}
    for key in ("n", "iterations", "seconds", "tflops"):
        v = item.get(key)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
            raise ValueError(f"{key} {v!r} is not a finite number >= 0")
        values[key] = float(v)
    if values["seconds"] <= 0 or values["iterations"] < 1:
        raise ValueError("no iteration was timed")
    name, dtype = item.get("name"), item.get("dtype")
    if not isinstance(name, str) or not isinstance(dtype, str) or not dtype:
        raise ValueError("name or dtype is not a string")
    return Run(
        gpu,
        name,
        dtype,
        int(values["n"]),
        int(values["iterations"]),
        values["seconds"],
        values["tflops"],
    )


def _text(doc: Mapping[str, Any], key: str) -> str | None:
    v = doc.get(key)
    return v if isinstance(v, str) else None


def parse(output: str) -> Smoke:
    """The benchmark's result from the container's output (the last marked line wins);
    ``error`` says what is wrong with an output that holds no readable result."""
    lines = [line[len(MARK) :] for line in output.splitlines() if line.startswith(MARK)]
    if not lines:
        return Smoke(error="the output holds no DOLMEN-BENCH line")
    try:
        doc = json.loads(lines[-1], parse_constant=_refuse)
    except ValueError as e:
        return Smoke(error=f"the DOLMEN-BENCH line is not JSON ({e})")
    if not isinstance(doc, dict):
        return Smoke(error="the DOLMEN-BENCH line is not a JSON object")
    base = Smoke(device=_text(doc, "device"), torch=_text(doc, "torch"), cuda=_text(doc, "cuda"))
    missing = _text(doc, "missing")
    if missing is not None:
        return replace(base, missing=missing, error=_text(doc, "error") or "")
    runs = doc.get("runs")
    if not isinstance(runs, list) or not runs:
        return replace(base, error="the DOLMEN-BENCH line holds no run")
    try:
        parsed = tuple(_run(r) for r in runs)
    except ValueError as e:
        return replace(base, error=f"the DOLMEN-BENCH line: {e}")
    return replace(base, runs=parsed)


def _refuse(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON holds")


def gemm_result(
    smoke: Smoke, subjects: Sequence[str], peaks: Mapping[str, float | None]
) -> dict[str, Any]:
    """The ``gemm`` result of a ``dolmen.bench/1`` document, as ``dolmen bench`` writes it
    (``workloads.gemm.GemmResult.to_json``, docs/bench.md): ``subjects`` name GPU i by the
    host's facts (``gpu:<i>`` beyond them), ``peaks`` maps a device name to the knowledge
    base's dense peak in the dtype run (None: unknown). Nothing is sampled inside the
    container: no samples, ``throttled`` unknown."""
    from dolmen.workloads.gemm import GemmEntry, GemmResult

    entries: list[GemmEntry] = []
    for dtype in sorted({r.dtype for r in smoke.runs}):
        runs = [r for r in smoke.runs if r.dtype == dtype]
        median = statistics.median(r.tflops for r in runs)
        for r in runs:
            if r.gpu is None:
                subject = "host"
            else:
                subject = subjects[r.gpu] if r.gpu < len(subjects) else f"gpu:{r.gpu}"
            entries.append(
                GemmEntry(
                    r.gpu,
                    subject,
                    r.dtype,
                    r.tflops,
                    peaks.get(r.name),
                    median,
                    n=r.n,
                    iterations=r.iterations,
                    seconds=r.seconds,
                )
            )
    return GemmResult(smoke.device or "", tuple(entries)).to_json()
