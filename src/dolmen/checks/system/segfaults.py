"""Processes that crashed inside a library of the NVIDIA stack (libnccl, libcuda, ...).

The kernel logs every segfault and general protection fault of a user process with the
library it crashed in ("pt_main_thread[2536443]: segfault at ... in libnccl.so.2[...]").
GPUd watches the libnccl ones: repeated, they point at GPU communication trouble (fabric
manager, NVLink), not only at the job. A crash in another program's library is that
program's and is not judged here. One finding per library.
"""

from __future__ import annotations

from collections import defaultdict

from dolmen.checks.context import Context
from dolmen.checks.log_severity import nvidia_library
from dolmen.checks.model import Level, Outcome, check, passed
from dolmen.checks.system.log_window import split_events, when, worst
from dolmen.facts.kernel_log import KernelEvent


@check(
    "system.segfaults",
    title="No process crashed in an NVIDIA library (libnccl, libcuda) in the recent past",
    level=Level.QUICK,
    needs=("kernel_log", "os"),
    remedy=(
        "Check NCCL and the driver stack the job used (NCCL_DEBUG=INFO, nvidia-smi -q, "
        "systemctl status nvidia-fabricmanager); run dcgmi diag -r 2 and an NCCL test on the "
        "node if crashes in libnccl repeat."
    ),
    limits={"window_hours": 24},
    source=(
        "GPUd accelerator-nvidia-nccl component (nvidia_nccl_segfault_in_libnccl: an event, "
        "no health state); kb/data/xids.toml [[event]] segfault"
    ),
)
def segfaults(ctx: Context) -> list[Outcome]:
    """Reads the kernel log's segfault events in NVIDIA libraries and the uptime."""
    split = split_events(ctx, ("segfault",), keep=nvidia_library)
    if isinstance(split, Outcome):
        return [split]
    if not split.recent:
        msg = f"no crash in an NVIDIA library in the window ({len(split.older)} older)"
        return [passed("host", msg, **split.evidence())]
    by_lib: dict[str, list[KernelEvent]] = defaultdict(list)
    for ev in split.recent:
        by_lib[(ev.device or "?").rsplit("/", 1)[-1]].append(ev)
    out = []
    for lib, evs in sorted(by_lib.items()):
        procs = sorted({f"{e.process}[{e.pid}]" for e in evs if e.process})
        summary = f"{len(evs)} crash(es) in {lib}, last {when(evs[-1])}: {', '.join(procs[:3])}"
        evidence = split.evidence(evs) | {"processes": procs}
        out.append(Outcome(worst(ctx, evs), f"lib:{lib}", summary, None, evidence))
    return out
