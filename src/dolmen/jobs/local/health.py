"""Which GPUs of a host are fit to run a job: the checks of ``dolmen validate --level quick``.

The supervisor judges the host with the same gpu checks as ``dolmen validate
--level quick --only gpu``: a gating check that fails for ``gpu:<bus id>`` makes
that GPU unhealthy. A GPU the driver reports lost is unhealthy even where no
check says so yet. What cannot be judged (no inventory, a check that could not
read its signal, a failure not tied to one GPU) is "undecided": the job keeps
running and the reason goes into its history.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dolmen.host import Host


@dataclass(frozen=True)
class GpuHealth:
    """The host's GPUs (positions, NVML/nvidia-smi order) and those found unhealthy."""

    gpus: tuple[int, ...]
    bad: Mapping[int, str] = field(default_factory=dict)  # position -> "check id: summary"
    undecided: tuple[str, ...] = ()  # why part of the judgement could not be made

    @property
    def healthy(self) -> tuple[int, ...]:
        """The GPUs not found unhealthy."""
        return tuple(g for g in self.gpus if g not in self.bad)


def inventory(host: Host) -> tuple[tuple[int, ...], str | None]:
    """The host's GPU positions, and why there are none when none could be read."""
    inv = host.gpus
    return tuple(g.position for g in inv.gpus), (inv.error if not inv.gpus else None)


def judge(host: Host, *, checks: bool = True) -> GpuHealth:
    """Judge the host's GPUs (module docstring). ``checks=False``: inventory and lost only."""
    inv = host.gpus
    if not inv.gpus:
        return GpuHealth((), {}, (f"no GPU inventory: {inv.error or 'no GPU found'}",))
    positions = tuple(g.position for g in inv.gpus)
    bad = {g.position: "gpu is lost (the driver answers 'GPU is lost')" for g in inv.gpus if g.lost}
    undecided: list[str] = []
    if checks:
        from dolmen.checks.model import Level, Status
        from dolmen.checks.suite import validate
        from dolmen.config import load_config

        try:
            verdict = validate(host, level=Level.QUICK, config=load_config(), only=("gpu",))
        except Exception as e:  # a broken check or config must not stop a running job
            return GpuHealth(positions, bad, (f"gpu checks could not run: {e}",))
        by_subject = {g.subject: g.position for g in inv.gpus}
        for f in verdict.findings:
            if not f.gating:
                continue
            pos = by_subject.get(f.subject)
            if f.status is Status.FAIL and pos is not None:
                bad.setdefault(pos, f"{f.check}: {f.summary}")
            elif f.status is Status.FAIL:
                undecided.append(f"{f.check} failed for {f.subject}: {f.summary}")
            elif f.status in (Status.UNKNOWN, Status.ERROR):
                undecided.append(f"{f.check} could not decide for {f.subject}: {f.summary}")
    return GpuHealth(positions, bad, tuple(undecided))
