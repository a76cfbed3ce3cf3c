"""What a step plans and what it did; the options the flow was given."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from dolmen.compat import StrEnum

if TYPE_CHECKING:
    from dolmen.host import Host


class Status(StrEnum):
    """A step's outcome. Only ``done`` is remembered as finished (resume skips it)."""

    DONE = "done"
    PLANNED = "planned"  # --dry-run: shown, not run
    SKIPPED = "skipped"  # --skip, or nothing was asked of it
    UNAVAILABLE = "unavailable"  # the part is not in this build
    UNKNOWN = "unknown"  # its input could not be read: nothing was changed
    FAILED = "failed"  # it ran and failed: the flow stops


@dataclass(frozen=True)
class StepPlan:
    """What a step would do: lines to show, whether applying changes anything, and what
    apply needs. ``status`` set means the step cannot run (unavailable, unknown, skipped)."""

    lines: tuple[str, ...]
    changes: bool = False
    status: Status | None = None
    payload: Any = None


@dataclass(frozen=True)
class StepResult:
    """What a step did; ``exit_code`` other than 0 for failed and unknown outcomes."""

    step: str
    status: Status
    lines: tuple[str, ...] = ()
    exit_code: int = 0
    data: Mapping[str, Any] | None = None  # what a step measured, for machines (state, JSON)

    def to_json(self) -> dict[str, Any]:
        """One step of the ``dolmen.setup/1`` document."""
        doc: dict[str, Any] = {
            "step": self.step,
            "status": self.status.value,
            "lines": list(self.lines),
            "exit_code": self.exit_code,
        }
        if self.data is not None:
            doc["data"] = dict(self.data)
        return doc


@dataclass(frozen=True)
class Options:
    """Everything the steps were asked for (the CLI's flags)."""

    level: str = "standard"
    profile: str | None = None
    scheduler: str = "slurm"  # slurm | kubernetes
    node_name: str | None = None
    slurm_conf: Path | None = None
    gres_conf: Path | None = None
    gres_mode: str = "explicit"
    device: str | None = None  # gres.conf File= pattern; None: the node's own devices
    k8s_values: Path | None = None
    bench_image: str | None = None  # the containers step's image; None: the resolved release
    bench_device: str = "cuda"  # cuda | cpu: where the containers step's benchmark runs
    users: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (name, groups)
    quotas: tuple[tuple[str, str, int], ...] = ()  # (user|group, name, gpus)
    quota_store: Callable[[], Any] | None = None  # the backend's QuotaStore, made lazily


@dataclass
class Context:
    """The host the flow works on and its options; ``cache`` keeps facts between steps."""

    host: Host
    options: Options
    cache: dict[str, Any] = field(default_factory=dict)


class Step(Protocol):
    """One step: ``plan`` reads only, ``apply`` does what the plan says."""

    name: str
    title: str

    def plan(self, ctx: Context) -> StepPlan:
        """What the step would do on ``ctx.host``; never writes."""
        ...

    def apply(self, ctx: Context, plan: StepPlan) -> StepResult:
        """Do what ``plan`` says, through the path that owns the change."""
        ...
