"""The probe agent on this machine's loopback (127.0.0.x only; no root, no namespace).

Each outcome the prover reads is made for real: an echo from the agent's listener, a
refusal from a port nobody holds, silence from a UDP socket that never answers, and a
TCP server that answers with something other than the echo.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from dolmen.net import agent

SRC = Path(__file__).resolve().parents[3] / "src"
LISTEN = (sys.executable, "-m", "dolmen.net.agent", "listen", "--name", "L")


def _free(kind: int) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def listener() -> Iterator[tuple[subprocess.Popen[str], int]]:
    port = _free(socket.SOCK_STREAM)
    proc = subprocess.Popen(
        [
            *LISTEN,
            "--tcp",
            str(port),
            "--udp",
            str(port),
            "--bind",
            "127.0.0.1",
            "--max-seconds",
            "60",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
    )
    assert proc.stdout is not None
    ready = json.loads(proc.stdout.readline())
    assert ready["ready"] and ready["bound"] == {"tcp": [port], "udp": [port]}
    try:
        yield proc, port
    finally:
        proc.terminate()
        proc.wait(10)


def test_echo_over_tcp_and_udp_names_the_listener(
    listener: tuple[subprocess.Popen[str], int],
) -> None:
    _, port = listener
    for proto in ("tcp", "udp"):
        got = agent.probe_one(proto, "127.0.0.1", port, f"n-{proto}", 2.0)
        assert got["outcome"] == "open" and got["echo_from"] == "L", got


def test_a_port_nobody_holds_is_refused() -> None:
    for proto, kind in (("tcp", socket.SOCK_STREAM), ("udp", socket.SOCK_DGRAM)):
        got = agent.probe_one(proto, "127.0.0.1", _free(kind), "x", 1.0)
        assert got["outcome"] == "refused", got


def test_a_udp_socket_that_never_answers_is_silence_within_the_timeout() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as mute:
        mute.bind(("127.0.0.1", 0))
        got = agent.probe_one("udp", "127.0.0.1", mute.getsockname()[1], "x", 0.3)
        data = mute.recv(256)  # it did arrive: only the echo is missing
    assert got["outcome"] == "silent" and "3 datagrams" in str(got["detail"])
    assert data == b"dolmen-probe x\n"
    assert float(str(got["ms"])) < 1000


def test_a_tcp_server_that_is_not_the_agent_is_no_echo() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)

        def answer() -> None:
            conn, _ = srv.accept()
            with conn:
                conn.recv(256)
                conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")

        t = threading.Thread(target=answer)
        t.start()
        got = agent.probe_one("tcp", "127.0.0.1", srv.getsockname()[1], "x", 1.0)
        t.join(5)
    assert got["outcome"] == "no-echo", got


def test_the_listener_reports_what_reached_it_and_survives_junk(
    listener: tuple[subprocess.Popen[str], int],
) -> None:
    proc, port = listener
    with socket.create_connection(("127.0.0.1", port), 2) as s:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")  # not a probe: recorded, not echoed
        assert s.recv(256) == b""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        u.sendto(b"\xff" * 300, ("127.0.0.1", port))
    got = agent.probe_one("udp", "127.0.0.1", port, "after-junk", 2.0)
    assert got["outcome"] == "open"
    proc.terminate()
    out, _ = proc.communicate(10)
    seen = [json.loads(line)["seen"] for line in out.splitlines() if '"seen"' in line]
    assert {"nonce": "after-junk", "peer": "127.0.0.1", "port": port, "proto": "udp"} in seen
    assert any(s["nonce"] is None and s["proto"] == "tcp" for s in seen)
    assert json.loads(out.splitlines()[-1]) == {"name": "L", "stopped": True}


def test_a_port_held_by_another_service_is_reported_not_fatal() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        out = subprocess.run(
            [*LISTEN, "--tcp", str(port), "--bind", "127.0.0.1", "--max-seconds", "0"],
            capture_output=True,
            text=True,
            env={"PYTHONPATH": str(SRC)},
            timeout=30,
        )
    ready = json.loads(out.stdout.splitlines()[0])
    assert ready["bound"] == {"tcp": [], "udp": []}
    assert "in use" in ready["failed"][f"tcp/{port}"]
