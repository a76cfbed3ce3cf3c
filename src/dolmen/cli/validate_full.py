"""``validate --level full``: the workload session the CLI builds (device, force, progress,
the "full tier: about N min" line) and the one line a Ctrl-C ends it with.

Imported only at level full, so the quick and standard tiers never load it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from dolmen.errors import UsageError

if TYPE_CHECKING:
    from dolmen.baseline import Baseline
    from dolmen.checks.model import Level
    from dolmen.checks.suite import Selection
    from dolmen.checks.verdict import Verdict
    from dolmen.config import Config
    from dolmen.host import Host
    from dolmen.host.deadline import Deadline
    from dolmen.workloads.model import Aborted
    from dolmen.workloads.session import Workloads

INTERRUPTED = 130  # docs/exit-codes.md: interrupted (Ctrl-C or SIGTERM)


def refuse_flags(full: bool, device: str | None, force: bool) -> None:
    """--device and --force mean something at level full only: say so, not ignore them."""
    if not full and (device or force):
        flag = "--device" if device else "--force"
        raise UsageError(
            f"{flag} applies to the workloads of --level full", hint="add --level full"
        )


def validate_full(
    host: Host,
    level: Level,
    config: Config,
    baseline: Baseline | None,
    selection: Selection,
    deadline: Deadline | None,
    device: str | None,
    force: bool,
) -> Verdict | int:
    """The verdict of a full run, or the exit code of a Ctrl-C during its workloads.
    ``deadline`` (--timeout's, started with the run) bounds the workloads and the checks
    together: the checks get what the workloads left."""
    from dolmen.checks.suite import validate
    from dolmen.workloads.model import Aborted

    workloads = workloads_for(host, config, device, force, deadline=deadline)
    try:
        return validate(
            host,
            level=level,
            config=config,
            baseline=baseline,
            timeout=deadline,
            selection=selection,
            workloads=workloads,
        )
    except Aborted as e:
        if workloads is not None and workloads.timed_out:
            return _timed_out(e, workloads)
        return interrupted(e, workloads.device if workloads else "cuda")
    finally:
        from dolmen.cli.progress import clear

        clear()


def workloads_for(
    host: Host,
    config: Config,
    device: str | None,
    force: bool,
    *,
    smoke: bool = False,
    label: str = "full tier",
    deadline: Deadline | None = None,
) -> Workloads | None:
    """The session of a full run on the live host; None on a tree or bundle (the workload
    checks then skip: "workloads run on the live host only")."""
    if host.kind != "live":
        return None
    from dolmen.cli.progress import terminal_progress
    from dolmen.workloads.model import no_progress
    from dolmen.workloads.session import Workloads

    inventory = host.gpus
    gpus = [g for g in inventory.gpus if not g.lost]
    chosen = (device or str(config.get("workloads", "device", "")) or "").lower() or None
    if chosen is None:
        chosen = "cuda" if gpus else "cpu"
        if not gpus:
            verdict = "; the verdict cannot be healthy" if label == "full tier" else ""
            _err(
                "no NVIDIA GPU seen: the workloads run on the CPU (--device cpu), measured "
                f"with no GPU threshold{verdict}"
            )
    return Workloads(
        host,
        config,
        device=chosen,
        force=force,
        smoke=smoke,
        progress=terminal_progress() or no_progress,
        # NVML's enumeration order, which CUDA follows under CUDA_DEVICE_ORDER=PCI_BUS_ID
        # (engine.load_torch); the minor number (Gpu.index) may differ from it.
        gpus=[g.position for g in gpus],
        subjects=[g.subject for g in gpus],
        scratch=[str(s) for s in config.get("workloads", "scratch", [])],
        notify=_err,
        label=label,
        deadline=deadline,
    )


def interrupted(e: Aborted, device: str, outcome: str = "no verdict") -> int:
    """The one line of a Ctrl-C (or SIGTERM) during the workloads, and its exit code;
    ``outcome`` says what the run leaves (validate: no verdict; bench: no bench.json)."""
    from dolmen.cli.progress import clear

    clear()
    during = f" during {e.during}" if e.during else ""
    freed = "GPU memory freed" if device == "cuda" else "memory freed"
    _err(f"dolmen: interrupted{during}: workloads stopped, {freed}; {outcome}")
    return INTERRUPTED


def _timed_out(e: Aborted, workloads: Workloads) -> int:
    """The one line of a --timeout that ran out during the workloads: undecided (exit 2),
    the workloads stopped and cleaned up as after Ctrl-C, and what the tier needs."""
    from dolmen.cli.progress import clear
    from dolmen.errors import ExitCode

    clear()
    during = f" during {e.during}" if e.during else ""
    freed = "GPU memory freed" if workloads.device == "cuda" else "memory freed"
    _err(
        f"dolmen: undecided: timed out after {workloads.deadline.seconds or 0:g} s{during}: "
        f"workloads stopped, {freed}; no verdict (the workloads' budgets are "
        f"{workloads.budget_total(workloads.planned):g} s: raise --timeout above them)"
    )
    return int(ExitCode.UNDECIDED)


def _err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
