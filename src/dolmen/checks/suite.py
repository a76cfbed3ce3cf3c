"""``validate``: Host -> Facts -> Checks -> Verdict, in one call."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from dolmen import __version__
from dolmen.checks import load_registry
from dolmen.checks.context import Context
from dolmen.checks.inventory import inventory
from dolmen.checks.model import CheckSpec, Level
from dolmen.checks.runner import matches, refuse_unknown, run_checks, select
from dolmen.checks.verdict import Verdict, coverage
from dolmen.compat import UTC
from dolmen.config import Config, check_thresholds
from dolmen.errors import UsageError
from dolmen.frozen import frozen
from dolmen.host import Host
from dolmen.host.deadline import Deadline

if TYPE_CHECKING:
    from dolmen.baseline import Baseline
    from dolmen.workloads.session import Workloads


@frozen
class Selection:
    """The checks of one run and the site's disabled names, after every refusal.

    Not a NamedTuple: typing makes one by compiling its string annotations, and the first
    ``compile`` of a process builds the ast module's 120 classes (9 million instructions,
    3% of a quick run)."""

    specs: list[CheckSpec]
    disabled: list[str]


def choose(config: Config, level: Level, only: Sequence[str] = ()) -> Selection:
    """The checks a run at ``level`` executes, once every name they are chosen by was
    refused or accepted: ``[thresholds."<id>"]`` ids and keys, ``[validate] disable`` and
    ``--only`` names (a typo must not run zero checks and call the host healthy), and an
    ``--only`` with no check at this level. The CLI calls it before any host is opened and
    hands the result to ``validate``, so each refusal is made once per run."""
    if config.sections.get("thresholds"):  # ids and keys exist only in the full registry
        check_thresholds(config, {i: s.limits for i, s in load_registry().items()})
    disabled = [str(d) for d in config.get("validate", "disable", [])]
    if only or disabled:
        known = load_registry()
        refuse_unknown(only, known, "--only")
        refuse_unknown(disabled, known, "[validate] disable")
    specs = select(load_registry(level).values(), level, only)
    if only and not specs:
        above = sorted({known[i].level.name.lower() for i in known if matches(i, only)})
        raise UsageError(
            f"--only {', '.join(only)}: no check at level {level.name.lower()}",
            hint=f"those checks run at level {', '.join(above)}: add --level {above[-1]}",
        )
    return Selection(specs, disabled)


def validate(
    host: Host,
    *,
    level: Level = Level.STANDARD,
    config: Config | None = None,
    baseline: Baseline | None = None,
    only: Sequence[str] = (),
    timeout: float | Deadline | None = None,
    selection: Selection | None = None,
    workloads: Workloads | None = None,
) -> Verdict:
    """Run every check up to ``level`` on ``host`` and return the verdict; ``timeout``
    (seconds) bounds the run (``--timeout``, checks/deadline.py). ``selection`` is what
    ``choose`` gave for the same config, level and ``only`` (computed here without it).

    ``workloads`` (level full, live host) run first, each once, for the checks selected:
    they take minutes, past the per-check time limit; ``Aborted`` (Ctrl-C) goes up. One
    deadline bounds both: the checks get what the workloads left of ``timeout`` (pass the
    Deadline the workloads stop at, ``Workloads.deadline``)."""
    config = config or Config()
    deadline = timeout if isinstance(timeout, Deadline) else Deadline(timeout)
    chosen = selection or choose(config, level, only)
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    ctx = Context(host, config=config, baseline=baseline, workloads=workloads)
    if workloads is not None:
        from dolmen.checks.workload import WORKLOAD_OF

        workloads.prepare(
            WORKLOAD_OF[s.id]
            for s in chosen.specs
            if s.id in WORKLOAD_OF and not matches(s.id, chosen.disabled)
        )
        if deadline.expired() and deadline.cut is None:  # they left the checks no time
            deadline.cut = "the workloads"
    findings = run_checks(ctx, chosen.specs, chosen.disabled, deadline)
    return Verdict(
        host=host.hostname,
        level=level.name.lower(),
        findings=tuple(findings),
        started=started.isoformat(timespec="seconds").replace("+00:00", "Z"),
        duration_s=time.perf_counter() - t0,
        source=host.describe(),
        version=__version__,
        coverage=coverage(ctx.store),
        inventory=inventory(ctx.store),
    )
