"""One verdict per host: the findings of a run and what they add up to."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import field
from enum import StrEnum
from typing import Any

from dolmen.checks.model import Finding, Status
from dolmen.errors import ExitCode
from dolmen.frozen import frozen

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


def judge(findings: Sequence[Finding]) -> Health:
    """Fail beats unknown/error beats warn. Advisory (non-gating) checks can only warn."""
    gating = [f.status for f in findings if f.gating]
    if Status.FAIL in gating:
        return Health.UNHEALTHY
    if Status.ERROR in gating or Status.UNKNOWN in gating:
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

    @property
    def health(self) -> Health:
        """See ``judge``."""
        return judge(self.findings)

    @property
    def counts(self) -> dict[str, int]:
        """Findings per status, every status present (zeros included)."""
        c = Counter(f.status.value for f in self.findings)
        return {s.value: c.get(s.value, 0) for s in Status}

    def problems(self) -> list[Finding]:
        """Gating failures first, then unknowns and errors: what a scheduler should hear."""
        order = {Status.FAIL: 0, Status.ERROR: 1, Status.UNKNOWN: 2}
        return sorted(
            (f for f in self.findings if f.gating and f.status in order),
            key=lambda f: (order[f.status], f.check, f.subject),
        )
