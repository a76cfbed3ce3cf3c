"""The interface every job backend implements (STYLE.md rule 10: small ABC, pure hooks).

``plan`` is pure: it returns exactly what ``submit`` would hand to the system
(the process table, the sbatch script, the manifests) and is what
``dolmen jobs plan`` prints. ``submit`` does only the I/O.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from dolmen.errors import UsageError
from dolmen.jobs.spec import JobSpec

if TYPE_CHECKING:
    from dolmen.jobs.quota import QuotaStore


class JobState(StrEnum):
    """A job's state, common to every backend."""

    PENDING = "pending"
    RUNNING = "running"
    RESTARTING = "restarting"  # recovering from a fault, from its last checkpoint
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def done(self) -> bool:
        """True for completed, failed and cancelled: nothing runs any more."""
        return self in (JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED)


@dataclass(frozen=True)
class Plan:
    """What would be submitted: named artifacts (file name -> text) and a summary."""

    backend: str
    spec: JobSpec
    artifacts: Mapping[str, str]
    summary: str


@dataclass(frozen=True)
class JobStatus:
    """One job as the backend sees it."""

    job_id: str
    name: str
    backend: str
    state: JobState
    restarts: int = 0
    nodes: tuple[str, ...] = ()
    reason: str = ""
    details: Mapping[str, str] = field(default_factory=dict)


class Backend(ABC):
    """Where jobs run: local processes, a Slurm cluster, a Kubernetes cluster."""

    name: str = "abstract"

    @abstractmethod
    def plan(self, spec: JobSpec) -> Plan:
        """Pure: exactly what submit would do, without doing it."""

    @abstractmethod
    def submit(self, spec: JobSpec) -> JobStatus:
        """Submit the job; returns its first status (with its id)."""

    @abstractmethod
    def status(self, job_id: str) -> JobStatus:
        """The job's current status; UsageError for an unknown id."""

    @abstractmethod
    def list(self) -> list[JobStatus]:
        """Jobs this backend knows, newest first."""

    @abstractmethod
    def cancel(self, job_id: str) -> JobStatus:
        """Stop the job; returns its final status."""

    @abstractmethod
    def logs(self, job_id: str, *, rank: int | None = None, follow: bool = False) -> Iterator[str]:
        """Output lines of the job (one rank, or all ranks prefixed with theirs)."""

    def quotas(self) -> QuotaStore:
        """Users, groups and GPU limits as this backend enforces them (dolmen.jobs.quota).

        The default says the backend keeps none; local, slurm and kubernetes override it.
        """
        raise UsageError(f"the {self.name} backend keeps no users or quotas")
