"""The server survives what a node's network and hardware do to it: malformed and slow
clients, oversized bodies, a host whose reads hang (NVML in the kernel), a full disk."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dolmen.host.tree import TreeHost
from dolmen.serve.agent import Agent
from dolmen.serve.app import ServeState, make_app
from dolmen.serve.auth import Authenticator, TokenFile
from dolmen.serve.server import BoundedH11
from dolmen.serve.store import Store
from tests.serve.conftest import InProcess


class HangingHost(TreeHost):
    """A tree whose every read blocks until released: a driver stuck in the kernel."""

    release = threading.Event()

    def read_bytes(self, path: str, *args: Any, **kw: Any) -> Any:
        self.release.wait(60)
        return super().read_bytes(path, *args, **kw)

    def run(self, *args: Any, **kw: Any) -> Any:
        self.release.wait(60)
        return super().run(*args, **kw)


class FastHeaders(BoundedH11):
    header_seconds = 0.5


def _server(home: Path, agent: Agent, **more: Any) -> InProcess:
    auth = Authenticator(TokenFile(home / "state" / "serve" / "tokens.json"))
    return InProcess(make_app(ServeState(agent, auth, open_reads=True)), **more)


@pytest.fixture
def stuck(home: Path, xid79: Path) -> Iterator[tuple[InProcess, Agent]]:
    store = Store(home / "state" / "serve" / "agent.db")
    agent = Agent(store, source=str(xid79), interval=3600, run_timeout=1.0,
                  host_factory=lambda: HangingHost(xid79))  # fmt: skip
    srv = _server(home, agent, http=FastHeaders)
    yield srv, agent
    HangingHost.release.set()
    srv.stop()
    store.close()
    HangingHost.release.clear()


def test_a_hung_host_leaves_the_api_answering(stuck: tuple[InProcess, Agent]) -> None:
    srv, agent = stuck
    with httpx.Client(base_url=srv.url, timeout=5) as c:
        t0 = time.monotonic()
        assert c.get("/healthz").status_code == 200
        ready = c.get("/readyz")
        assert ready.status_code == 503 and ready.json()["reason"].startswith("no verdict yet")
        assert "dolmen_agent_up 1" in c.get("/metrics").text
        assert c.get("/v1/verdict/latest").status_code == 404
        assert time.monotonic() - t0 < 3
        assert agent.status()["running"] is True
        # a facts read on the hung host ends at its deadline, 504, and the server goes on
        hung = c.get("/v1/facts", params={"only": "os"}, timeout=15)
        assert hung.status_code == 504 and "deadline" in hung.json()["error"]
        assert c.get("/healthz").status_code == 200


def test_malformed_slow_and_oversized_clients(stuck: tuple[InProcess, Agent]) -> None:
    srv, _agent = stuck
    port = srv.port
    # junk instead of HTTP: 400 from h11, connection closed
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"\x16\x03\x01 not http at all\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 400")
    # a client that sends half a request line and stalls is closed at the header deadline
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"GET /healthz HT")
        t0 = time.monotonic()
        assert s.recv(100) == b""  # closed by the server
        assert time.monotonic() - t0 < 3
    # headers that go on past 16 KiB without ending
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40000)
        assert s.recv(100).startswith(b"HTTP/1.1 4")
    # a Content-Length that is not a number: h11 refuses it, 400
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"POST /v1/node/drain HTTP/1.1\r\nHost: x\r\nContent-Length: lots\r\n\r\n{}")
        assert s.recv(100).startswith(b"HTTP/1.1 400")
    with httpx.Client(base_url=srv.url, timeout=5) as c:
        big = c.post("/v1/node/drain", content=b"x" * 200_000)
        assert big.status_code == 413
        assert c.get("/healthz").status_code == 200  # after all of that


def test_a_full_disk_is_read_only_degraded_mode(home: Path, xid79: Path) -> None:
    # max_page_count makes SQLite answer SQLITE_FULL, what a full disk makes it answer
    store = Store(home / "state" / "serve" / "agent.db", max_pages=8)
    agent = Agent(store, source=str(xid79), interval=3600)
    srv = _server(home, agent)
    try:
        with httpx.Client(base_url=srv.url, timeout=10) as c:
            end = time.monotonic() + 60
            while agent.runs_total == 0 and time.monotonic() < end:
                time.sleep(0.1)
            ready = c.get("/readyz")
            assert ready.status_code == 503, ready.text
            assert "read-only degraded mode" in ready.json()["reason"]
            assert "disk is full" in ready.json()["reason"]
            metrics = c.get("/metrics").text
            assert "dolmen_agent_store_degraded 1" in metrics
            assert 'dolmen_health{level="quick"} 2' in metrics  # still served, from memory
            latest = c.get("/v1/verdict/latest")
            assert latest.status_code == 200 and latest.headers["x-dolmen-run"] == "unstored"
            assert latest.json()["status"] == "unhealthy"
    finally:
        srv.stop()
        store.close()


def test_the_store_is_wal_and_keeps_runs(home: Path) -> None:
    import sqlite3

    path = home / "h.db"
    store = Store(path)
    doc = {"started": "2026-12-01T00:00:00Z", "level": "quick", "status": "healthy",
           "exit_code": 0, "duration_s": 0.1, "counts": {"pass": 1}}  # fmt: skip
    assert store.add(doc, '{"a": 1}\n', "x 1\n") == 1
    store.close()
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    again = Store(path)
    run = again.latest()
    assert run is not None and run.verdict == '{"a": 1}\n' and run.counts == {"pass": 1}
    again.close()


def test_an_unwritable_state_folder_is_degraded_not_a_crash(home: Path) -> None:
    target = home / "file"
    target.write_text("not a folder")
    store = Store(target / "serve" / "agent.db")
    assert store.degraded is not None and store.latest() is None and store.add({}, "", "") is None
