"""What a check is and what it returns (DESIGN.md "Checks").

A check is one function decorated with ``@check(...)``: declarative metadata
(id, level, the facts it needs, when it applies, its limits and remedy) and a
body that returns outcomes. The runner adds the check id and turns exceptions
and timeouts into ``error`` findings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from dolmen.compat import StrEnum
from dolmen.frozen import frozen

if TYPE_CHECKING:
    from dolmen.checks.context import Context


class Status(StrEnum):
    """The result of a check for one subject."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"  # does not apply here, or the hardware does not support the signal
    UNKNOWN = "unknown"  # the signal should be readable but was not: never a pass
    ERROR = "error"  # the check itself raised or timed out


class Level(IntEnum):
    """How deep a run goes; each level includes the ones below."""

    QUICK = 1  # passive reads under a second: Slurm HealthCheckProgram, prologs
    STANDARD = 2  # slower reads (more commands, whole logs)
    FULL = 3  # active workloads (GEMM, memory bandwidth, NCCL, storage I/O)

    @classmethod
    def parse(cls, text: str) -> Level:
        """``quick``/``standard``/``full`` (any case) to a Level; ValueError names the choices."""
        try:
            return cls[text.upper()]
        except KeyError:
            raise ValueError(
                f"unknown level {text!r}; valid levels: quick, standard, full"
            ) from None


@frozen
class Outcome:
    """What a check body returns for one subject (``host``, ``gpu:<bus id>``, ``ib:mlx5_0/1``)."""

    status: Status
    subject: str
    summary: str
    remedy: str | None = None  # None: the check's default remedy applies (fail/warn/unknown)
    evidence: Mapping[str, Any] = field(default_factory=dict)


def passed(subject: str, summary: str, **evidence: Any) -> Outcome:
    """The subject is fine."""
    return Outcome(Status.PASS, subject, summary, None, evidence)


def warned(subject: str, summary: str, *, remedy: str | None = None, **evidence: Any) -> Outcome:
    """Worth attention; does not make the host unhealthy."""
    return Outcome(Status.WARN, subject, summary, remedy, evidence)


def failed(subject: str, summary: str, *, remedy: str | None = None, **evidence: Any) -> Outcome:
    """The subject is broken; the host is unhealthy."""
    return Outcome(Status.FAIL, subject, summary, remedy, evidence)


def skipped(subject: str, summary: str, **evidence: Any) -> Outcome:
    """Not applicable here, or not supported by this hardware."""
    return Outcome(Status.SKIP, subject, summary, None, evidence)


def unknown(subject: str, summary: str, *, remedy: str | None = None, **evidence: Any) -> Outcome:
    """The signal could not be read: never a pass."""
    return Outcome(Status.UNKNOWN, subject, summary, remedy, evidence)


CheckFn = Callable[["Context"], Iterable[Outcome]]


@frozen
class CheckSpec:
    """A check's declarative metadata and its body."""

    id: str  # category.subject.signal, e.g. gpu.ecc.volatile_dbe
    title: str  # what it checks, one line
    level: Level
    needs: tuple[str, ...]  # facts subsystems the body reads
    when: tuple[str, ...]  # predicates (context.PREDICATES) that must hold, else skip
    remedy: str  # default remedy for warn/fail/unknown outcomes
    limits: Mapping[str, Any]  # default thresholds; site config overrides per check
    source: str  # where the limits or the rule come from
    gating: bool  # False: advisory (posture); its fail/unknown never change the verdict
    fn: CheckFn

    @property
    def category(self) -> str:
        """The first component of the id: gpu, stack, interconnect, storage, tuning..."""
        return self.id.split(".", 1)[0]


REGISTRY: dict[str, CheckSpec] = {}


def check(
    id: str,
    *,
    title: str,
    level: Level = Level.QUICK,
    needs: Iterable[str] = (),
    when: Iterable[str] = (),
    remedy: str,
    limits: Mapping[str, Any] | None = None,
    source: str = "",
    gating: bool = True,
) -> Callable[[CheckFn], CheckFn]:
    """Register a check. The framework decides whether it applies (``when``); see CheckSpec."""

    def register(fn: CheckFn) -> CheckFn:
        if id in REGISTRY:
            raise ValueError(f"duplicate check id {id!r}")
        REGISTRY[id] = CheckSpec(
            id=id,
            title=title,
            level=level,
            needs=tuple(needs),
            when=tuple(when),
            remedy=remedy,
            limits=dict(limits or {}),
            source=source,
            gating=gating,
            fn=fn,
        )
        return fn

    return register


@frozen
class Device:
    """Who a GPU finding is about, as an RMA or a dashboard join needs it: the driver's
    index (NVML's, ``nvidia-smi -i``, dcgm-exporter's ``gpu`` label), UUID, board serial,
    model name and bus id (``00000000:86:00.0``). None where no source gave it."""

    index: int | None = None
    uuid: str | None = None
    serial: str | None = None
    model: str | None = None
    pci_bus_id: str | None = None

    def known(self) -> dict[str, int | str]:
        """The fields some source gave, by name (what outputs print; None ones left out)."""
        values = {
            "index": self.index,
            "uuid": self.uuid,
            "serial": self.serial,
            "model": self.model,
            "pci_bus_id": self.pci_bus_id,
        }
        return {k: v for k, v in values.items() if v is not None}


@frozen
class Finding:
    """One row of a report: an outcome with the check that produced it; ``device`` is the
    identity of the GPU its subject names (``checks.identity``), None for other subjects."""

    check: str
    category: str
    status: Status
    subject: str
    summary: str
    remedy: str | None
    evidence: Mapping[str, Any]
    gating: bool = True
    device: Device | None = None
