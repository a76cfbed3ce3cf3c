"""OOM kills: the kernel's out-of-memory killer in the kernel log's recent past.

A system-wide OOM kill means the node ran out of memory; its victim may be a job, or a
daemon the node needs (slurmd, nvidia-persistenced, the container runtime). It warns,
as GPUd's memory component records OOM events without a health state. A kill inside a
memory cgroup's own limit (``CONSTRAINT_MEMCG``, "Memory cgroup out of memory") is the
job's: counted, not judged. One kill prints several lines ("oom-kill:constraint=...",
"Out of memory: Killed process ..."); kills are counted by victim pid.
"""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed
from dolmen.checks.system.log_window import split_events, when, worst
from dolmen.facts.kernel_log import KernelEvent


@check(
    "system.oom_kills",
    title="No system-wide OOM kill in the kernel log's recent past",
    level=Level.QUICK,
    needs=("kernel_log", "os"),
    remedy=(
        "Find what used the memory (the OOM report's task list in dmesg; job memory limits); "
        "restart a killed daemon (systemctl status slurmd nvidia-persistenced), and set "
        "memory limits on jobs (Slurm --mem, cgroup memory.max) so they are killed alone."
    ),
    limits={"window_hours": 24},
    source=(
        "GPUd memory component (OOM events, after cadvisor's oomparser): an event, no health "
        "state; kb/data/xids.toml [[event]] oom_kill"
    ),
)
def oom_kills(ctx: Context) -> list[Outcome]:
    """Reads the kernel log's oom_kill events and the uptime (the window)."""
    split = split_events(ctx, ("oom_kill",))
    if isinstance(split, Outcome):
        return [split]
    system = [e for e in split.recent if e.detail != "memcg"]
    memcg = len(_kills(split.recent)) - len(_kills(system))
    note = f"; {memcg} kill(s) inside a memory cgroup's own limit (the job's)" if memcg else ""
    if not system:
        older = len(_kills(split.older))
        msg = f"no system-wide OOM kill in the window ({older} older){note}"
        return [passed("host", msg, **split.evidence())]
    kills = _kills(system)
    victims = sorted({e.process for e in system if e.process})
    summary = (
        f"{len(kills)} OOM kill(s), last {when(system[-1])}"
        + (f": {', '.join(victims[:5])}" if victims else "")
        + note
    )
    evidence = split.evidence(system) | {"victims": victims, "memcg_kills": memcg}
    return [Outcome(worst(ctx, system), "host", summary, None, evidence)]


def _kills(events: list[KernelEvent]) -> set[object]:
    """One kill per victim pid; lines that name none (a cut summary line) count alone."""
    return {e.pid if e.pid is not None else ("line", e.line_no) for e in events}
