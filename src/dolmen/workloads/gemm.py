"""GEMM per GPU in each dtype its model supports: achieved dense TFLOP/s, with clocks, power
and temperature sampled while it runs.

Square ``n x n`` matmuls (``2 n^3`` flops each) in a timed loop per GPU and dtype, the GPUs
one after another (a GPU is judged against its peers in the same run, so each runs
alone). The dtypes come from the KB row the device's name matches: bf16 and fp16 where it
has a 16-bit peak, tf32 where it has ``tf32_tflops``, fp8 (``torch._scaled_mm``, e4m3)
where it has ``fp8_tflops``; an unknown model runs bf16 and fp16, measured with no peak.
On the CPU: fp32 and bf16, subject ``host``, no peak.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from typing import Any

from dolmen.frozen import frozen
from dolmen.host import Host
from dolmen.kb.gpus import GpuModel
from dolmen.workloads import engine
from dolmen.workloads.model import Request, Unavailable

CPU_DTYPES = ("fp32", "bf16")
UNKNOWN_MODEL_DTYPES = ("bf16", "fp16")
# n: large enough to reach the tensor-core peak on a GPU (8192: 1.1 TFLOP a matmul), small
# enough for a CPU run to finish a few in its budget; smoke sizes are for tests.
SIZES = {("cuda", False): 8192, ("cuda", True): 1024, ("cpu", False): 256, ("cpu", True): 64}
# NVML clock-event bits that mean the clocks were pulled down: SW power cap 0x4, HW slowdown
# 0x8, SW thermal 0x20, HW thermal 0x40, HW power brake 0x80 (nvml.h
# nvmlClocksEventReason*); idle, application clocks, sync boost are not throttling.
THROTTLE_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
SAMPLED = ("clocks.sm", "power.draw", "temperature.gpu")
FIELDS = (
    ("index", *SAMPLED, "clocks_event_reasons.active"),
    ("index", *SAMPLED, "clocks_throttle_reasons.active"),
    ("index", *SAMPLED),
)


@frozen
class GemmEntry:
    """One GPU (None on the CPU) in one dtype."""

    gpu: int | None
    subject: str
    dtype: str
    tflops: float
    peak_tflops: float | None  # the KB's dense peak; None: unknown model, or the CPU
    median_tflops: float  # the node's median for this dtype (this entry's peers)
    samples: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    throttled: bool | None = None  # None: the clock-event reasons could not be sampled
    n: int = 0
    iterations: int = 0
    seconds: float = 0.0
    sampler: str = ""  # what sampled: "nvml", "nvidia-smi"; "" none (the CPU, no source)


@frozen
class GemmResult:
    """Every entry, the dtypes that could not run (gpu, dtype, why) and the model matched."""

    device: str
    entries: tuple[GemmEntry, ...]
    skipped: tuple[tuple[int | None, str, str], ...] = ()
    models: Mapping[int, str] = field(default_factory=dict)  # GPU -> KB id where matched

    def to_json(self) -> dict[str, Any]:
        """The ``gemm`` shape of docs/validate-full.md."""
        return {
            "gpus": [
                {
                    "gpu": e.gpu,
                    "subject": e.subject,
                    "dtype": e.dtype,
                    "tflops": e.tflops,
                    "peak_tflops": e.peak_tflops,
                    "median_tflops": e.median_tflops,
                    "samples": {
                        "clock_mhz": list(e.samples.get("clocks.sm", ())),
                        "power_w": list(e.samples.get("power.draw", ())),
                        "temp_c": list(e.samples.get("temperature.gpu", ())),
                    },
                    "throttled": e.throttled,
                    "n": e.n,
                    "iterations": e.iterations,
                    "seconds": e.seconds,
                    "sampler": e.sampler,
                }
                for e in self.entries
            ],
            "skipped": [{"gpu": g, "dtype": d, "reason": r} for g, d, r in self.skipped],
        }


def peak(model: GpuModel | None, dtype: str) -> float | None:
    """The KB's dense peak of ``model`` in ``dtype``; None where the KB has no figure.
    FP16 runs at the BF16 rate from Ampere on (datasheets list one figure for both)."""
    if model is None:
        return None
    return {
        "bf16": model.bf16_tflops,
        "fp16": model.fp16_tflops if model.fp16_tflops is not None else model.bf16_tflops,
        "tf32": model.tf32_tflops,
        "fp8": model.fp8_tflops,
        "fp32": model.fp32_tflops,
    }.get(dtype)


def dtypes_for(model: GpuModel | None) -> tuple[str, ...]:
    """The dtypes to run on a GPU of ``model``: those with a KB peak, in a fixed order; a
    model without any tensor figure (or none known) runs bf16 and fp16, measured only."""
    if model is None:
        return UNKNOWN_MODEL_DTYPES
    found = tuple(d for d in ("bf16", "fp16", "tf32", "fp8") if peak(model, d) is not None)
    return found or UNKNOWN_MODEL_DTYPES


def throttled(masks: Sequence[float]) -> bool | None:
    """Whether any sampled clock-event mask has a throttling bit; None with no sample."""
    if not masks:
        return None
    return any(int(m) & THROTTLE_MASK for m in masks)


def run(request: Request, host: Host | None = None) -> GemmResult:
    """Run the GEMMs of ``request``; Unavailable where torch or the GPUs cannot."""
    torch = engine.load_torch()
    if host is None:
        from dolmen.host import open_host

        with open_host(None) as live:
            return _run(torch, request, live)
    return _run(torch, request, host)


def _run(torch: Any, request: Request, host: Host) -> GemmResult:
    n = SIZES[(request.device, request.smoke)]
    plan: list[tuple[int | None, str, GpuModel | None]] = []
    models: dict[int, str] = {}
    if request.device == "cpu":
        plan = [(None, d, None) for d in CPU_DTYPES]
    else:
        engine.guard(host, request)
        from dolmen.kb import load_kb

        catalogue = load_kb().gpus
        for index in engine.cuda_devices(torch, request):
            model = catalogue.match(str(torch.cuda.get_device_name(index)))
            if model is not None:
                models[index] = model.id
            plan += [(index, d, model) for d in dtypes_for(model)]
    share = request.budget_s / max(len(plan), 1)
    done: list[GemmEntry] = []
    skipped: list[tuple[int | None, str, str]] = []
    with engine.abortable(torch, "gemm"):
        for i, (gpu, dtype, model) in enumerate(plan):
            label = f"gemm {'cpu' if gpu is None else f'gpu {gpu}'} {dtype}"
            try:
                iters, secs, samples, thr, source = _one(
                    torch,
                    host,
                    gpu,
                    dtype,
                    n,
                    share,
                    label,
                    _step_progress(request, i, len(plan), share),
                )
            except (RuntimeError, TypeError, AttributeError) as e:  # a dtype this build lacks
                skipped.append((gpu, dtype, f"{type(e).__name__}: {_first_line(e)}"))
                continue
            tflops = 2.0 * n**3 * iters / secs / 1e12 if secs > 0 else 0.0
            done.append(
                GemmEntry(
                    gpu,
                    request.subject(gpu),
                    dtype,
                    tflops,
                    peak(model, dtype),
                    tflops,
                    samples,
                    thr,
                    n,
                    iters,
                    secs,
                    source,
                )
            )
    if not done:
        why = "; ".join(f"{d}: {r}" for _, d, r in skipped) or "nothing to run"
        raise Unavailable(f"no GEMM could run: {why}")
    medians = {
        d: statistics.median(e.tflops for e in done if e.dtype == d)
        for d in {e.dtype for e in done}
    }
    entries = tuple(dataclasses.replace(e, median_tflops=medians[e.dtype]) for e in done)
    return GemmResult(request.device, entries, tuple(skipped), models)


def _step_progress(
    request: Request, i: int, steps: int, share: float
) -> Callable[[str, float, float | None], None]:
    """Step ``i`` of ``steps``'s progress as the whole workload's, with its ETA."""

    def progress(label: str, done: float, _eta: float | None) -> None:
        request.progress(label, (i + done) / steps, (steps - i - done) * share)

    return progress


def _first_line(e: Exception) -> str:
    lines = str(e).strip().splitlines()
    return lines[0][:160] if lines else "no message"


def _one(
    torch: Any,
    host: Host,
    gpu: int | None,
    dtype: str,
    n: int,
    seconds: float,
    label: str,
    progress: Callable[[str, float, float | None], None],
) -> tuple[int, float, dict[str, tuple[float, ...]], bool | None, str]:
    """(iterations, seconds, samples, throttled, what sampled) of one GPU in one dtype."""
    device = "cpu" if gpu is None else f"cuda:{gpu}"
    step = make_step(torch, device, dtype, n)
    if gpu is None:
        iters, secs = engine.timed(
            step, torch=torch, device=device, seconds=seconds, label=label, progress=progress
        )
        return iters, secs, {}, None, ""
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    try:
        with engine.Sampler(host, gpu, FIELDS) as sampler:
            iters, secs = engine.timed(
                step, torch=torch, device=device, seconds=seconds, label=label, progress=progress
            )
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    samples = {f: tuple(sampler.series(f)) for f in SAMPLED}
    reasons = sampler.series("clocks_event_reasons.active") or sampler.series(
        "clocks_throttle_reasons.active"
    )
    return iters, secs, samples, throttled(reasons), sampler.source


def make_step(torch: Any, device: str, dtype: str, n: int) -> Callable[[], None]:
    """One ``n x n`` matmul in ``dtype`` on ``device``, its operands allocated once (the
    bench's bare loop times the same step)."""
    if dtype == "fp8":
        a = torch.randn(n, n, device=device).to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device=device).to(torch.float8_e4m3fn).t()  # column-major
        one = torch.tensor(1.0, device=device)

        def fp8() -> None:
            torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

        fp8()  # fails here, not in the loop, where this build or GPU has no FP8 GEMM
        return fp8
    kind = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(dtype, torch.float32)
    a = torch.randn(n, n, device=device, dtype=kind)
    b = torch.randn(n, n, device=device, dtype=kind)
    c = torch.empty(n, n, device=device, dtype=kind)

    def matmul() -> None:
        torch.matmul(a, b, out=c)

    return matmul
