"""Knowledge base (placeholder until the data files land)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KnowledgeBase:
    """Placeholder."""


def load_kb() -> KnowledgeBase:
    """Placeholder."""
    return KnowledgeBase()
