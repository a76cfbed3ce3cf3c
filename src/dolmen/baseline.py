"""Baselines (placeholder until `dolmen baseline` lands)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Baseline:
    """Placeholder."""


def load_baseline(path: str) -> Baseline:
    """Placeholder."""
    return Baseline()
