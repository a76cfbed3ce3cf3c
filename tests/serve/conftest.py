"""The real ``dolmen serve`` on 127.0.0.1 and a free port, stopped by PID; host trees of
tests/hosts for its quick tier, so no GPU is needed."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.hosts import scenarios

SRC = Path(__file__).resolve().parents[2] / "src"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def xid79(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 8x H100 host with GPU 3 fallen off the bus: an unhealthy quick verdict."""
    return scenarios.build("h100-xid79", tmp_path_factory.mktemp("xid79") / "tree")


@pytest.fixture(scope="session")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenarios.build("h100-hgx-healthy", tmp_path_factory.mktemp("healthy") / "tree")


@contextlib.contextmanager
def short_home(prefix: str = "dsv-") -> Iterator[Path]:
    """A short state + config root under /tmp (a unix socket path holds 107 bytes at
    most), removed on the way out."""
    root = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        (root / "state").mkdir()
        (root / "config").mkdir()
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def home() -> Iterator[Path]:
    with short_home() as root:
        yield root


def env_for(home: Path, **more: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("DOLMEN_AGENT", None)
    env.update(
        PYTHONPATH=str(SRC),
        DOLMEN_STATE_DIR=str(home / "state"),
        DOLMEN_CONFIG_DIR=str(home / "config"),
        **more,
    )
    return env


def dolmen(home: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``dolmen ARGV`` as a process of its own, as slurmd and NPD start it."""
    return subprocess.run(
        [sys.executable, "-m", "dolmen.cli.main", *argv],
        env=env_for(home, **env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


class Served:
    """A ``dolmen serve`` process; ``url``, ``stop()``."""

    def __init__(self, home: Path, *args: str, scheme: str = "http", **client: Any) -> None:
        self.port = free_port()
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        self.log = home / f"serve-{self.port}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "dolmen.cli.main", "serve", "--listen",
                 f"127.0.0.1:{self.port}", *args],
                env=env_for(home),
                stdout=out,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        self.client = httpx.Client(base_url=self.url, timeout=10.0, **client)

    def wait(
        self, path: str = "/readyz", status: int = 200, seconds: float = 60.0
    ) -> httpx.Response:
        """Until ``path`` answers ``status`` (the first quick run takes a while here)."""
        end = time.monotonic() + seconds
        last: Any = None
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise AssertionError(f"dolmen serve exited {self.proc.returncode}: {self.logs()}")
            try:
                last = self.client.get(path)
                if last.status_code == status:
                    return last
            except httpx.TransportError as e:
                last = e
            time.sleep(0.1)
        raise AssertionError(f"{path} never answered {status}: {last!r}; {self.logs()}")

    def logs(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> int:
        self.client.close()
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        return self.proc.returncode


@pytest.fixture
def serve(home: Path) -> Iterator[Any]:
    """``serve(*args)`` starts a server; every one is stopped at the end."""
    started: list[Served] = []

    def start(*args: str, **kw: Any) -> Served:
        s = Served(home, *args, **kw)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


class InProcess:
    """The application under a real uvicorn server in a thread of the test (for seams the
    command line does not have: a host that hangs, a store that fills up)."""

    def __init__(self, app: Any, **more: Any) -> None:
        import uvicorn

        from dolmen.serve.server import Listen, uvicorn_config

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn_config(app, Listen("127.0.0.1", self.port), **more))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        end = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > end or not self.thread.is_alive():
                raise AssertionError("uvicorn did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)
