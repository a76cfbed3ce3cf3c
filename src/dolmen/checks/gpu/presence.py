"""Whether the host has NVIDIA GPUs, from every source the bundle holds (issue 8).

A GPU exists if any source shows it (facts.gpu's sources, and the kernel log's NVRM lines).
No GPU is a verdict only where the bus itself was read: sysfs's PCI tree (or ``lspci``)
shows every device, so none there is "no NVIDIA GPU found". That host is undecided (a GPU
node that lost every GPU and a CPU node look the same) unless the site says
``[validate] expected_gpus = 0``; a bundle without the bus says only what it lacks.
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context, no_gpu_reason
from dolmen.checks.model import Level, Outcome, check, failed, passed, unknown
from dolmen.checks.remedy import unbundled
from dolmen.facts import FactError
from dolmen.facts.gpu import KERNEL_LOG, LSPCI, PCI_TREE, seen_with_log
from dolmen.facts.reading import READ, source_state
from dolmen.host import NOT_IN_BUNDLE
from dolmen.values.busid import gpu_subject

NO_GPU_FOUND = "no NVIDIA GPU found"
NO_GPU_SOURCE = "no GPU source in this bundle"


@check(
    "gpu.present",
    title="The host's NVIDIA GPUs are seen by some source, or the site expects none",
    level=Level.QUICK,
    needs=("gpu", "kernel_log", "stack"),
    remedy=(
        "On a CPU-only node set [validate] expected_gpus = 0 in dolmen.toml. On a GPU node "
        "look for the GPUs on the bus (lspci -d 10de:) and in the kernel log (dmesg | grep "
        "NVRM); a node whose GPUs all vanished needs a reboot or service."
    ),
    source="issue 8: absence of a source is not evidence of absence; the site's "
    "[validate] expected_gpus",
)
def present(ctx: Context) -> list[Outcome]:
    """Reads every GPU source of the gpu facts and the kernel log's GPU events."""
    gpu = ctx.gpu
    try:
        log = ctx.kernel_log
    except FactError:
        log = None
    seen, log_source = seen_with_log(gpu, log)
    sources = {**gpu.sources, KERNEL_LOG: log_source}
    states = {name: source_state(why) for name, why in sources.items()}
    expected = ctx.config.get("validate", "expected_gpus")
    ev: dict[str, Any] = {
        "sources": {n: READ if states[n] == READ else why for n, why in sources.items()},
        "expected_gpus": expected,
    }
    count = max([len(seen), *gpu.unnamed.values()])
    if count:
        by = sorted({n for names in seen.values() for n in names} | set(gpu.unnamed))
        out = [passed("host", f"{count} NVIDIA GPU(s) seen ({', '.join(by)})", gpus=count, **ev)]
        if not gpu.gpus:  # no driver list names them: each is judged here, by who saw it
            out.extend(
                passed(gpu_subject(bus), f"seen by {', '.join(names)}", sources=list(names))
                for bus, names in seen.items()
            )
        return out
    # An installed driver (libcuda.so.1 in the linker cache...) is no GPU, but says what
    # the host is for: said beside "no GPU seen", never in place of a GPU source.
    try:
        driver = ctx.stack.driver_installed()
    except FactError:
        driver = None
    also = ""
    if driver:
        ev["driver_installed"] = driver
        also = f"; an NVIDIA driver is installed ({driver})"
    # The bus was read only where its listing is in the bundle: a PCI tree, lspci's output.
    bus_read = sources.get(PCI_TREE) == READ or sources.get(LSPCI) == READ
    if not bus_read:
        if all(s == NOT_IN_BUNDLE for s in states.values()):
            add = unbundled(f"{NOT_IN_BUNDLE}: {' or '.join(sources)}")  # what to add
            return [
                unknown("host", f"{NO_GPU_SOURCE}: {', '.join(sources)}{also}", remedy=add, **ev)
            ]
        return [unknown("host", no_gpu_reason(sources) + also, **ev)]
    if expected == 0:
        return [passed("host", f"{NO_GPU_FOUND}, as the site expects (expected_gpus = 0)", **ev)]
    if isinstance(expected, int):
        return [failed("host", f"{NO_GPU_FOUND}; the site expects {expected}{also}", **ev)]
    return [
        unknown(
            "host",
            f"{NO_GPU_FOUND} (a CPU-only host? set [validate] expected_gpus = 0){also}",
            **ev,
        )
    ]
