"""Fixtures of the setup tests: private state and config folders, the healthy H100 tree."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.hosts import scenarios


@pytest.fixture(autouse=True)
def _private_dirs(dolmen_dirs: Path) -> Path:
    """No setup test touches the real state or config folders (tests/conftest.py)."""
    return dolmen_dirs


@pytest.fixture(scope="session")
def pristine_h100(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The healthy 8x H100 scenario, built once; tests work on copies."""
    return scenarios.build("h100-hgx-healthy", tmp_path_factory.mktemp("h100") / "tree")


@pytest.fixture
def h100(pristine_h100: Path, tmp_path: Path) -> Path:
    """A private copy of the healthy H100 tree (tune's apply writes into it)."""
    dest = tmp_path / "h100"
    shutil.copytree(pristine_h100, dest, symlinks=True)
    return dest


def audit_events(state: Path, action: str) -> list[tuple[str, dict[str, object]]]:
    """(outcome, details) of each ``action`` event of the audit log (ECS lines), in order."""
    import json

    log = state / "audit" / "audit.log"
    lines = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    return [
        (e["event"]["outcome"], e["dolmen"]["details"])
        for e in lines
        if e["event"]["action"] == action
    ]
