"""The hand-written bench documents of fixtures/ (see its README: shapes, not measurements)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
NAMES = ("cpu-smoke", "h100x8")


def fixture_doc(name: str) -> dict[str, Any]:
    """A fresh copy of fixtures/<name>.json (tests may change it)."""
    return copy.deepcopy(_load(name))


_CACHE: dict[str, dict[str, Any]] = {}


def _load(name: str) -> dict[str, Any]:
    if name not in _CACHE:
        _CACHE[name] = json.loads((FIXTURES / f"{name}.json").read_text())
    return _CACHE[name]


@pytest.fixture(params=NAMES)
def doc(request: pytest.FixtureRequest) -> dict[str, Any]:
    return fixture_doc(request.param)
