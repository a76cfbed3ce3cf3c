"""What the change flow talks about: targets, readings, planned changes, a plan.

A profile entry (``[sysctl] "vm.swappiness" = 10``) expands on a host into one
or more ``Target``s (one per file, CPU policy, IRQ, unit). A setting reads each
target into a ``Reading``; ``plan`` turns both into a ``Change`` without
touching the host. A ``Plan`` is the list of changes for one profile on one
host: what ``dolmen tune plan`` prints and what ``apply`` journals.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from dolmen.compat import StrEnum


class Action(StrEnum):
    """What apply will do with one target."""

    OK = "ok"  # already as the profile wants
    CHANGE = "change"  # apply writes it
    SKIP = "skip"  # absent, unsupported or not writable on this host (reason says which)
    PENDING = "pending"  # staged for the next boot or restart, not in effect yet


class Effect(StrEnum):
    """When a change takes effect."""

    NOW = "now"
    REBOOT = "reboot"
    RESTART = "restart"  # of a service (named in the change's notes)


@dataclass(frozen=True)
class Target:
    """One thing a profile entry changes on this host.

    ``key`` is the entry's key in the profile; ``name`` what is changed, as a
    person reads it (``vm.swappiness``, ``cpu3 governor``, ``irq 45 (eth0)``);
    ``path`` the host file read and written, when there is one; ``desired``
    the canonical value the setting writes. ``origin`` is where the value was
    set (``ai-training.toml:14``) and ``source`` the citation it carries.
    """

    setting: str
    key: str
    name: str
    desired: str
    path: str = ""
    origin: str = ""
    source: str = ""
    extra: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A plain dict for the journal and --json."""
        return {**asdict(self), "extra": dict(self.extra)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Target:
        """The inverse of ``to_json``."""
        return cls(
            setting=str(data["setting"]),
            key=str(data["key"]),
            name=str(data["name"]),
            desired=str(data["desired"]),
            path=str(data.get("path", "")),
            origin=str(data.get("origin", "")),
            source=str(data.get("source", "")),
            extra={str(k): str(v) for k, v in dict(data.get("extra", {})).items()},
        )


@dataclass(frozen=True)
class Reading:
    """The current value of a target.

    ``value`` None with ``skip`` empty means "absent, will be created" (a drop-in
    file dolmen owns). A non-empty ``skip`` says why the target cannot be
    tuned here (no cpufreq in a VM, read-only in this network namespace).
    ``staged`` is what the next boot will use (kernel command line).
    """

    value: str | None
    skip: str = ""
    staged: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Change:
    """One row of a plan: a target, its current value and what apply will do."""

    target: Target
    current: str | None
    action: Action
    effect: Effect = Effect.NOW
    reason: str = ""
    notes: tuple[str, ...] = ()

    @property
    def acts(self) -> bool:
        """Whether apply writes this target."""
        return self.action is Action.CHANGE

    def to_json(self) -> dict[str, Any]:
        """A plain dict for the journal and --json."""
        return {
            "target": self.target.to_json(),
            "current": self.current,
            "action": self.action.value,
            "effect": self.effect.value,
            "reason": self.reason,
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Change:
        """The inverse of ``to_json``."""
        cur = data.get("current")
        return cls(
            target=Target.from_json(data["target"]),
            current=None if cur is None else str(cur),
            action=Action(str(data["action"])),
            effect=Effect(str(data.get("effect", "now"))),
            reason=str(data.get("reason", "")),
            notes=tuple(str(n) for n in data.get("notes", ())),
        )


@dataclass(frozen=True)
class Plan:
    """Every change one profile makes on one host, in the order apply runs them."""

    profile: str
    host: str
    changes: tuple[Change, ...]
    notes: tuple[str, ...] = ()

    @property
    def steps(self) -> tuple[Change, ...]:
        """The changes apply performs, in order."""
        return tuple(c for c in self.changes if c.acts)

    def to_json(self) -> dict[str, Any]:
        """The ``dolmen.tune.plan/1`` document."""
        counts: dict[str, int] = {a.value: 0 for a in Action}
        for c in self.changes:
            counts[c.action.value] += 1
        return {
            "schema": "dolmen.tune.plan/1",
            "profile": self.profile,
            "host": self.host,
            "counts": counts,
            "reboot_needed": any(
                c.effect is Effect.REBOOT and c.action in (Action.CHANGE, Action.PENDING)
                for c in self.changes
            ),
            "changes": [c.to_json() for c in self.changes],
            "notes": list(self.notes),
        }


class ApplyFailed(Exception):
    """A setting could not make a change (a command failed); the engine rolls back."""


class StepSkipped(Exception):
    """Raised by a setting's apply when the host refused a write and nothing changed,
    for a reason that is known to be benign (a kernel-managed IRQ)."""
