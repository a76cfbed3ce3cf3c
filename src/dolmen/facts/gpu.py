"""gpu facts (placeholder until its collector lands)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dolmen.host import Host


@dataclass(frozen=True)
class GpuFacts:
    """Placeholder."""

    present: bool = False
    unread: Mapping[str, str] = field(default_factory=dict)


def collect(host: Host) -> GpuFacts:
    """Placeholder."""
    return GpuFacts(unread={"*": "collector not written yet"})
