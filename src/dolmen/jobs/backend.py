"""The interface every job backend implements, the one submission flow, and the registry.

STYLE.md rule 10 (small ABC, pure hooks; TorchX's shape): ``plan`` is pure and
is what ``dolmen jobs plan`` prints; ``preflight`` refuses what the system would
refuse or queue forever; ``schedule`` does only the I/O. ``Backend.submit`` runs
them in one order for every backend::

    resolve -> plan -> preflight -> audit intent -> schedule -> audit outcome

so that every ``jobs.submit`` event has one target (``job:<backend>/<name>``),
an intent before anything is handed to the system and its outcome after
(``success`` with the job id, ``refused``, ``failed``; jobs/audit.py).

Each backend declares the options it takes (``OPTIONS``: which ``dolmen jobs``
flag or ``[jobs]`` key of dolmen.toml sets each); the CLI builds a backend from
that table. Backends load lazily by name from ``BACKENDS``.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from dolmen.compat import StrEnum
from dolmen.errors import DolmenError, UsageError
from dolmen.jobs.spec import JobSpec

if TYPE_CHECKING:
    from dolmen.jobs.quota import QuotaStore

# name -> "module:class"; a new backend is one package and one line here.
BACKENDS: dict[str, str] = {
    "local": "dolmen.jobs.local.backend:LocalBackend",
    "slurm": "dolmen.jobs.slurm.backend:SlurmBackend",
    "kubernetes": "dolmen.jobs.kubernetes.backend:KubernetesBackend",
}


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
    # What would run, but not well: said on stderr by submit and plan, in plan --json.
    warnings: tuple[str, ...] = ()


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

    def to_json(self, *, details: bool = True) -> dict[str, Any]:
        """One job as ``dolmen jobs status --json`` and ``jobs list`` write it, and as
        ``dolmen serve``'s /v1/jobs pages it (without ``details``: backend-specific)."""
        row: dict[str, Any] = {
            "job_id": self.job_id,
            "name": self.name,
            "backend": self.backend,
            "state": self.state.value,
            "restarts": self.restarts,
            "nodes": list(self.nodes),
            "reason": self.reason,
        }
        if details:
            row["details"] = dict(self.details)
        return row


@dataclass(frozen=True)
class Option:
    """One constructor option of a backend, and where the CLI takes its value from:
    a ``dolmen jobs`` flag (``flag``), else a key (``config``) of dolmen.toml's
    ``section`` (``[jobs]`` unless said)."""

    name: str
    help: str
    flag: str | None = None
    config: str | None = None
    metavar: str = "VALUE"
    section: str = "jobs"

    @property
    def param(self) -> str | None:
        """The click parameter name of ``flag`` (``--health-from`` -> ``health_from``)."""
        return self.flag.lstrip("-").replace("-", "_") if self.flag else None


class Backend(ABC):
    """Where jobs run: local processes, a Slurm cluster, a Kubernetes cluster."""

    name: str = "abstract"
    OPTIONS: ClassVar[tuple[Option, ...]] = ()

    # --- the hooks a backend implements --------------------------------------------------
    def resolve(self, spec: JobSpec) -> JobSpec:
        """Fill what the backend takes from the submitting environment (default: nothing)."""
        return spec

    @abstractmethod
    def plan(self, spec: JobSpec) -> Plan:
        """Pure: exactly what submit would do, without doing it."""

    @abstractmethod
    def preflight(self, plan: Plan) -> None:
        """Refuse (a DolmenError) what the system would refuse or queue forever; nothing
        has been handed to it yet, and nothing is audited."""

    @abstractmethod
    def schedule(self, plan: Plan) -> JobStatus:
        """Hand the plan to the system (the I/O only); the job's first status, with its id."""

    def submitted(self, status: JobStatus, plan: Plan) -> JobStatus:
        """After the outcome is recorded: what follows a submission (a watcher, a fresh
        status read). Default: ``status`` as it is."""
        return status

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

    # --- the one submission flow ---------------------------------------------------------
    def submit(self, spec: JobSpec) -> JobStatus:
        """Submit the job (module docstring); its first status, with its id.

        The intent is recorded fail closed (AuditUnavailable: nothing submitted); the
        outcome after the system took the job cannot undo it, so an outcome that could
        not be recorded is said in the status's details (``audit``) instead.
        """
        from dolmen.jobs.audit import submit_intent, submit_outcome

        plan = self.plan(self.resolve(spec))
        if plan.spec.scratch and self.name != "local":  # its supervisor does it (docs/crypt.md)
            raise UsageError(f'scratch = "encrypted": the local backend only, not {self.name}')
        self.preflight(plan)
        submit_intent(self.name, plan.spec)
        try:
            status = self.schedule(plan)
        except DolmenError as e:
            submit_outcome(self.name, plan.spec, refusal(e), reason=e.message)
            raise
        except BaseException as e:
            submit_outcome(self.name, plan.spec, "failed", reason=f"{type(e).__name__}: {e}")
            raise
        lost = submit_outcome(self.name, plan.spec, "success", job_id=status.job_id)
        if lost:
            status = replace(status, details={**status.details, "audit": f"not recorded: {lost}"})
        return self.submitted(status, plan)


def refusal(error: DolmenError) -> str:
    """``refused`` when the system said no to the job itself (bad input, over quota),
    ``failed`` when it could not take it (a dead service, a write that failed)."""
    from dolmen.jobs.quota import QuotaExceeded

    return "refused" if isinstance(error, UsageError | QuotaExceeded) else "failed"


def backend_class(name: str) -> type[Backend]:
    """The class of the backend called ``name``; UsageError names the valid choices."""
    if name not in BACKENDS:
        raise UsageError(f"unknown backend {name!r}; valid backends: {', '.join(BACKENDS)}")
    module, _, attr = BACKENDS[name].partition(":")
    cls = getattr(importlib.import_module(module), attr)
    assert isinstance(cls, type) and issubclass(cls, Backend)
    return cls


def flag_options() -> list[tuple[Option, str]]:
    """Every option some backend takes from a ``dolmen jobs`` flag, once per flag, with the
    backends that declare it (``"kubernetes"``), in registry order."""
    found: dict[str, tuple[Option, list[str]]] = {}
    for name in BACKENDS:
        for opt in backend_class(name).OPTIONS:
            if opt.flag:
                found.setdefault(opt.flag, (opt, []))[1].append(name)
    return [(opt, ", ".join(names)) for opt, names in found.values()]


def get_backend(name: str, **options: Any) -> Backend:
    """The backend called ``name``, made with ``options``; UsageError names the valid choices."""
    return backend_class(name)(**options)
