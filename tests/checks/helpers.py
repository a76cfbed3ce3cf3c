"""Running one check on a host tree, as the check tests do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dolmen.checks import load_registry
from dolmen.checks.context import Context
from dolmen.checks.model import Finding
from dolmen.checks.runner import run_one
from dolmen.config import Config
from dolmen.host.tree import TreeHost


def run_check(root: Path, check: str, **limits: Any) -> list[Finding]:
    """The findings of check ``check`` on the tree at ``root``, with site ``limits``."""
    config = Config(sections={"thresholds": {check: limits}}) if limits else None
    return run_one(Context(TreeHost(root), config=config), load_registry()[check])


def by_subject(findings: list[Finding]) -> dict[str, Finding]:
    """Findings keyed by subject."""
    return {f.subject: f for f in findings}
