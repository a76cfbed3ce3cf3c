"""Fixtures for the jobs tests: a private state folder, a fast-polling local backend that
cancels what a test leaves running, and ``wait_for``."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from dolmen.jobs.local.backend import LocalBackend

T = TypeVar("T")
WORKLOADS = Path(__file__).parent / "workloads"


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """DOLMEN_STATE_DIR and DOLMEN_CONFIG_DIR in tmp_path (inherited by the supervisors)."""
    monkeypatch.setenv("DOLMEN_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DOLMEN_CONFIG_DIR", str(tmp_path / "etc"))
    monkeypatch.delenv("DOLMEN_JOBS_HEALTH_FROM", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    return tmp_path / "state"


def make_local(**options: object) -> LocalBackend:
    """A local backend that polls fast and gives ranks 2 s to stop."""
    opts: dict[str, object] = {"poll": 0.05, "stop_grace": 2.0, "health_interval": 0.2}
    opts.update(options)
    return LocalBackend(**opts)  # type: ignore[arg-type]


@pytest.fixture
def local(state: Path) -> Iterator[LocalBackend]:
    """The local backend on the test's state folder; leftover jobs are cancelled."""
    backend = make_local()
    yield backend
    stop_all(backend)


def stop_all(backend: LocalBackend) -> None:
    """Cancel every job that still runs (a failing test must not leave processes behind)."""
    for st in backend.list():
        if not st.state.done:
            backend.cancel(st.job_id)


def wait_for(probe: Callable[[], T | None], timeout: float = 60.0, what: str = "") -> T:
    """Poll ``probe`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what or probe}")
        time.sleep(0.02)
