"""The containers step's benchmark: a short GEMM inside the image, run through the audited
launch of ``dolmen containers run``, its result kept in setup's state and a bench.json.

``prepare`` reads only and says what is missing when the benchmark cannot run, in this
order: the GPUs (unless ``--bench-device cpu``), a docker or podman on the PATH, the image
in one of their local stores (never pulled: the pull command is named), a launch plan
without problems (a CDI spec for podman's GPUs...). ``run`` starts it and reads its one
marked line back (containers/smoke.py); an image without python3 or torch is skipped
naming which, a container that sees no GPU the host lists fails the step (jobs in it
would not see them either).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from dolmen.compat import UTC
from dolmen.containers.hostinfo import HostGpus
from dolmen.containers.plan import Plan, Request
from dolmen.containers.smoke import Smoke
from dolmen.errors import ExitCode
from dolmen.setup.model import Context, Status, StepResult

NAME = "containers"
_KEEP = 64 << 10  # the end of the container's output kept besides its marked lines
_TAIL = 3  # lines of a failed container's output shown
_INTERRUPTED = 130  # launch's status after Ctrl-C stopped the container


@dataclass(frozen=True)
class Ready:
    """A benchmark that can start: the request and the launch plan for it."""

    request: Request
    plan: Plan
    device: str
    subjects: tuple[str, ...]  # GPU i's subject in the host's facts (PCI order)


def prepare(ctx: Context, image: str, info: HostGpus) -> Ready | str:
    """The benchmark ready to start, or what is missing (one line, with the fix)."""
    from dolmen.containers import smoke
    from dolmen.containers.images import STORES, stored
    from dolmen.containers.plan import plan
    from dolmen.containers.site import gather

    device = ctx.options.bench_device
    if device == "cuda" and info.silent:
        return (
            f"no GPU answered ({info.silent}): the benchmark needs them; "
            "--bench-device cpu runs it on the CPU"
        )
    site = gather(ctx.host)
    runtimes = [r for r in STORES if r in site.installed]
    if not runtimes:
        others = sorted(site.installed - set(STORES))
        found = f" ({', '.join(others)} found: run it by hand)" if others else ""
        return (
            f"no container runtime: neither docker nor podman is on the PATH{found}; "
            "install one (apt-get install podman)"
        )
    answers = [stored(ctx.host, r, image) for r in runtimes]
    held = next((a for a in answers if a.present), None)
    if held is None:
        absent = [a for a in answers if a.present is False]
        if absent:
            return (
                f"image not pulled: {image} is not in the local store of "
                f"{' or '.join(a.runtime for a in absent)}; dolmen never pulls (several GB): "
                f"`{absent[0].pull}`, then dolmen setup again"
            )
        return "the image store could not be asked: " + "; ".join(a.why for a in answers)
    req = Request(
        image,
        smoke.command(device),
        runtime=held.runtime,
        gpus="all" if device == "cuda" else "none",
        network="none",  # a benchmark needs no network
        env=("CUDA_DEVICE_ORDER=PCI_BUS_ID",),  # CUDA index i = the driver's GPU i
    )
    launch_plan = plan(req, site)
    if launch_plan.problems:
        return f"the container cannot start: {launch_plan.problems[0]}"
    return Ready(req, launch_plan, device, info.subjects)


def describe(ready: Ready) -> str:
    """The plan's line for a benchmark that will start."""
    where = "the GPUs" if ready.device == "cuda" else "the CPU"
    return (
        f"benchmark: a short GEMM on {where} in {ready.request.image} "
        f"({ready.plan.runtime}'s local store; audited as containers.run)"
    )


def run(ctx: Context, ready: Ready, lines: tuple[str, ...]) -> StepResult:
    """Start the benchmark, read its result, write bench.json; ``lines`` lead the result."""
    import time

    from dolmen.containers import smoke
    from dolmen.containers.launch import launch
    from dolmen.report.bench.output import run_folder

    started = datetime.now(UTC)
    folder = run_folder(None, started)  # checked before the container starts
    log = folder / "container.log"
    image = ready.request.image
    for note in ready.plan.notes:
        lines = (*lines, f"note: {note}")
    t0 = time.monotonic()
    rc = launch(ready.plan, ready.request, ctx.host.environ(), log=log)
    wall = time.monotonic() - t0
    if rc == _INTERRUPTED:  # Ctrl-C: the step stays "started", the next run says so
        raise KeyboardInterrupt
    tail, marked = _output(log)
    result = smoke.parse(marked)
    if rc in (smoke.NOT_FOUND, smoke.NOT_EXECUTABLE) and not result.missing:
        why = f"no {smoke.PYTHON} in {image} (exit {rc}): the benchmark runs the image's own"
        return _skipped(lines, f"{why} {smoke.PYTHON}; output: {log}")
    if result.missing == "torch":
        return _skipped(lines, f"no torch in {image} ({result.error}); output: {log}")
    if result.missing == "gpu":
        return StepResult(
            NAME,
            Status.FAILED,
            (
                *lines,
                f"torch in {image} sees no GPU although the driver lists {len(ready.subjects)}:"
                f" the {ready.plan.runtime} launch does not pass them ({result.error})",
                "jobs in this image would not see them either: `dolmen validate` judges the "
                "toolkit (stack.container.*)",
            ),
            int(ExitCode.UNHEALTHY),
        )
    if rc != 0 or not result.runs:
        shown = [f"  | {t}" for t in tail.strip().splitlines()[-_TAIL:]]
        why = result.error or "no result"
        return StepResult(
            NAME,
            Status.FAILED,
            (*lines, f"the benchmark container exited {rc} ({why}); output: {log}", *shown),
            int(ExitCode.UNHEALTHY),
        )
    return _measured(ctx, ready, lines, result, started, wall, folder)


def _output(log: Path) -> tuple[str, str]:
    """The end of the container's output and its marked lines, however long it is (a
    chatty image is not a reason to fail): read in chunks, the rest dropped."""
    from collections import deque

    from dolmen.containers.smoke import MARK
    from dolmen.fsutil import iter_regular

    marked: list[str] = []
    end: deque[str] = deque()
    size, rest = 0, ""
    try:
        for chunk in iter_regular(log, 1 << 40):
            *whole, rest = (rest + chunk.decode("utf-8", "replace")).split("\n")
            for line in whole:
                if line.startswith(MARK):
                    marked.append(line)
                end.append(line)
                size += len(line) + 1
                while size > _KEEP and len(end) > 1:
                    size -= len(end.popleft()) + 1
    except FileNotFoundError:
        return "", ""
    if rest.startswith(MARK):
        marked.append(rest)
    return "\n".join([*end, rest]), "\n".join(marked)


def _skipped(lines: tuple[str, ...], why: str) -> StepResult:
    return StepResult(NAME, Status.SKIPPED, (*lines, f"benchmark skipped: {why}"))


def _measured(
    ctx: Context,
    ready: Ready,
    lines: tuple[str, ...],
    result: Smoke,
    started: datetime,
    wall: float,
    folder: Path,
) -> StepResult:
    """bench.json (dolmen.bench/1) beside the container's output, and the figures."""
    from dolmen import __version__
    from dolmen.containers.smoke import gemm_result
    from dolmen.kb import load_kb
    from dolmen.report.bench.document import bench_document
    from dolmen.report.bench.output import write_run
    from dolmen.workloads.gemm import peak

    catalogue = load_kb().gpus
    peaks = {r.name: peak(catalogue.match(r.name), r.dtype) for r in result.runs}
    gemm = gemm_result(result, ready.subjects, peaks)
    doc = bench_document(
        host=ctx.host.hostname,
        started=started.isoformat(timespec="seconds").replace("+00:00", "Z"),
        device=ready.device,
        wall_s=wall,
        results={"gemm": gemm},
        errors={},
        version=__version__,
    )
    container = {
        "image": ready.request.image,
        "runtime": ready.plan.runtime,
        "torch": result.torch,
        "cuda": result.cuda,
    }
    doc["container"] = container
    [written], _ = write_run(doc, folder, plots=False)
    figures = [
        f"gemm {e['subject']} {e['dtype']}: {e['tflops']:.3g} TFLOP/s"
        + (f" ({e['tflops'] / e['peak_tflops']:.0%} of peak)" if e["peak_tflops"] else "")
        + f", n={e['n']}, {e['iterations']} in {e['seconds']:.2f} s"
        for e in gemm["gpus"]
    ]
    out = (
        *lines,
        f"benchmark in {ready.request.image} ({ready.plan.runtime}, torch {result.torch}):",
        *(f"  {f}" for f in figures),
        f"bench.json: {written} (`dolmen bench --input {written}` shows it)",
    )
    data = {
        **container,
        "device": ready.device,
        "bench_json": str(written),
        "gemm": [
            {"subject": e["subject"], "dtype": e["dtype"], "tflops": e["tflops"]}
            for e in gemm["gpus"]
        ],
    }
    return StepResult(NAME, Status.DONE, out, data=data)
