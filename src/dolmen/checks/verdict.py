"""One verdict per host: the findings of a run and what they add up to."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from dolmen.checks.model import Finding, Status
from dolmen.compat import StrEnum
from dolmen.errors import ExitCode
from dolmen.frozen import frozen
from dolmen.host import NOT_IN_BUNDLE

if TYPE_CHECKING:
    from dolmen.facts import FactStore

SCHEMA = "dolmen.verdict/1"


class Health(StrEnum):
    """What the findings add up to."""

    HEALTHY = "healthy"  # nothing failed, nothing unknown
    DEGRADED = "degraded"  # warnings only
    UNHEALTHY = "unhealthy"  # a gating check failed
    UNDECIDED = "undecided"  # no failure, but a gating check could not read its signal

    @property
    def exit_code(self) -> ExitCode:
        """0 healthy or degraded, 1 unhealthy, 2 could not decide."""
        return {
            Health.HEALTHY: ExitCode.OK,
            Health.DEGRADED: ExitCode.OK,
            Health.UNHEALTHY: ExitCode.UNHEALTHY,
            Health.UNDECIDED: ExitCode.UNDECIDED,
        }[self]


def judge(findings: Sequence[Finding], level: str = "") -> Health:
    """Fail beats unknown/error beats warn. Advisory (non-gating) checks can only warn.

    At level ``full`` a workload that was skipped (not run: no torch, a busy GPU, a bundle,
    a CPU run) leaves the tier undone: undecided, never healthy."""
    gating = [f.status for f in findings if f.gating]
    if Status.FAIL in gating:
        return Health.UNHEALTHY
    if Status.ERROR in gating or Status.UNKNOWN in gating:
        return Health.UNDECIDED
    if level == "full" and any(
        f.gating and f.category == "workload" and f.status is Status.SKIP for f in findings
    ):
        return Health.UNDECIDED
    if any(f.status in (Status.WARN, Status.FAIL) for f in findings):
        return Health.DEGRADED
    return Health.HEALTHY


@frozen
class Verdict:
    """A run's result for one host."""

    host: str
    level: str
    findings: tuple[Finding, ...]
    started: str  # ISO 8601 UTC
    duration_s: float
    source: Mapping[str, Any] = field(default_factory=dict)  # live, tree or archive
    version: str = ""
    # Per source family: {"state": read | not in this bundle | unreadable, "reason": ...}
    coverage: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # What the run found (host, GPUs, IB ports, NICs) from the facts it loaded: checks/inventory
    inventory: Mapping[str, Any] = field(default_factory=dict)

    @property
    def health(self) -> Health:
        """See ``judge``."""
        return judge(self.findings, self.level)

    @property
    def counts(self) -> dict[str, int]:
        """Findings per status, every status present (zeros included)."""
        c = Counter(f.status.value for f in self.findings)
        return {s.value: c.get(s.value, 0) for s in Status}

    @property
    def partial(self) -> str | None:
        """``partial bundle: read X; not in this bundle: Y`` when some source family was not
        in the bundle, else None (a whole host, or a live one)."""
        missing = [k for k, c in self.coverage.items() if c["state"] == NOT_IN_BUNDLE]
        if not missing:
            return None
        read = [k for k, c in self.coverage.items() if c["state"] == READ]
        return f"partial bundle: read {', '.join(read) or 'nothing'}; {NOT_IN_BUNDLE}: " + (
            ", ".join(missing)
        )

    @property
    def gpu_note(self) -> str | None:
        """What the verdict line says of a host without a GPU seen (gpu.present's summary)."""
        for f in self.findings:
            if f.check == "gpu.present" and f.status is not Status.PASS:
                return f.summary
            if f.check == "gpu.present" and f.summary.startswith("no NVIDIA GPU found"):
                return f.summary
        return None

    def problems(self) -> list[Finding]:
        """Gating failures first, then unknowns and errors: what a scheduler should hear."""
        order = {Status.FAIL: 0, Status.ERROR: 1, Status.UNKNOWN: 2}
        if self.level == "full":  # a workload not run is why a full run is undecided
            order[Status.SKIP] = 3
        return sorted(
            (
                f
                for f in self.findings
                if f.gating
                and f.status in order
                and (f.status is not Status.SKIP or f.category == "workload")
            ),
            key=lambda f: (order[f.status], f.check, f.subject),
        )


# The source families of the coverage: (family, facts subsystem, the unread key that says
# why it was not read). gpu's own ``sources`` add theirs (PCI tree, inventory, lspci...).
FAMILIES = (
    ("kernel log", "kernel_log", "events"),
    ("kernel modules", "stack", "modules"),
    ("NVIDIA driver proc", "stack", "driver_version"),
    ("linker cache", "stack", "libraries"),
    ("InfiniBand", "infiniband", "ports"),
    ("memory", "memory", "meminfo"),
    ("CPU", "cpu", "cpuinfo"),
    ("mounts", "storage", "mounts"),
)
READ = "read"


def coverage(store: FactStore) -> dict[str, dict[str, str]]:
    """What the run read, per source family, from the facts' own reasons (``unread`` and
    gpu's ``sources``): read, not in this bundle, or unreadable with the reason. Only the
    facts this run collected count: a report never collects more."""
    from dolmen.facts import FactError
    from dolmen.facts.reading import source_state

    reasons: dict[str, str | None] = {}
    gpu = store.done("gpu")
    if gpu is not None and not isinstance(gpu, FactError):
        reasons.update(gpu.sources)
    for family, name, key in FAMILIES:
        facts = store.done(name)
        if isinstance(facts, FactError):
            reasons[family] = f"unreadable: {facts.message}"
        elif facts is not None:
            reasons[family] = facts.unread.get(key)
    out: dict[str, dict[str, str]] = {}
    for family, why in reasons.items():
        state = source_state(why)
        out[family] = {"state": state} if state == READ else {"state": state, "reason": str(why)}
    return out
