"""os facts (placeholder until its collector lands)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dolmen.host import Host


@dataclass(frozen=True)
class OsFacts:
    """Placeholder."""

    unread: Mapping[str, str] = field(default_factory=dict)


def collect(host: Host) -> OsFacts:
    """Placeholder."""
    return OsFacts(unread={"*": "collector not written yet"})
