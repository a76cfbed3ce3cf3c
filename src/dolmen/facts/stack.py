"""stack facts (placeholder until its collector lands)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dolmen.host import Host


@dataclass(frozen=True)
class StackFacts:
    """Placeholder."""

    unread: Mapping[str, str] = field(default_factory=dict)


def collect(host: Host) -> StackFacts:
    """Placeholder."""
    return StackFacts(unread={"*": "collector not written yet"})
