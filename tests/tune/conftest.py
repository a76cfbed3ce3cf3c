"""Fixtures of the tune tests: private config and state folders, recorded host trees."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tune.trees import build_host, copy_tree


@pytest.fixture(autouse=True)
def dolmen_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """DOLMEN_STATE_DIR and DOLMEN_CONFIG_DIR under tmp_path: no test touches the real ones."""
    state, config = tmp_path / "state", tmp_path / "config"
    (config / "profiles").mkdir(parents=True)
    monkeypatch.setenv("DOLMEN_STATE_DIR", str(state))
    monkeypatch.setenv("DOLMEN_CONFIG_DIR", str(config))
    monkeypatch.delenv("DOLMEN_TUNE_CRASH_AT", raising=False)
    yield config


@pytest.fixture(scope="session")
def pristine_host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The standard test host, built once; tests work on copies (``host_tree``)."""
    return build_host(tmp_path_factory.mktemp("pristine") / "host")


@pytest.fixture
def host_tree(pristine_host: Path, tmp_path: Path) -> Path:
    """A fresh copy of the standard test host for one test."""
    return copy_tree(pristine_host, tmp_path / "host")
