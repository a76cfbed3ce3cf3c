"""The agent's unix socket (``<state>/serve/agent.sock``), where ``dolmen validate
--level quick`` asks before it runs cold (serve/client.py).

One request line (JSON, at most ``LINE_MAX`` bytes, within ``READ_SECONDS``), one JSON
answer, then the connection closes. The socket is mode 0660: whoever may run a health
check as the agent's user or group may ask (the answer is what a cold run would print).
A client that sends junk, too much or nothing gets a refusal or is dropped; the event
loop never waits on it. A stale socket file from a killed agent is replaced; a path
that is something else (a regular file, a folder) is left alone and named.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import stat
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from dolmen.serve.agent import Agent
from dolmen.serve.answer import parse_request
from dolmen.serve.bounds import Busy, Slow, blocking

LINE_MAX = 64 * 1024
READ_SECONDS = 2.0
ANSWER_SECONDS = 10.0  # --slurm runs scontrol
SUN_PATH_MAX = 107  # sockaddr_un's sun_path, less its terminating zero


async def serve_socket(agent: Agent) -> Callable[[], Awaitable[None]]:
    """Listen on the agent socket; returns the closer. Without a socket (a path too long
    or taken), one line on stderr and the HTTP API goes on alone."""
    path = agent.store.path.parent / "agent.sock"
    why = _unusable(path)
    if why:
        print(f"dolmen serve: no agent socket, validate runs cold: {why}", file=sys.stderr)
        return _nothing

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            writer.write(frame(await _answer(agent, reader)))
            await asyncio.wait_for(writer.drain(), READ_SECONDS)
        except (OSError, TimeoutError):
            pass  # the client went away: nothing to tell it
        finally:
            writer.close()

    server = await asyncio.start_unix_server(handle, path=str(path), limit=LINE_MAX)
    os.chmod(path, 0o660)

    async def close() -> None:
        server.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()

    return close


async def _nothing() -> None:
    return None


async def _answer(agent: Agent, reader: asyncio.StreamReader) -> dict[str, Any]:
    try:
        line = await asyncio.wait_for(reader.readline(), READ_SECONDS)
        req = parse_request(json.loads(line))
    except (TimeoutError, asyncio.TimeoutError, ValueError, asyncio.LimitOverrunError) as e:
        return {"refused": f"bad request: {e or e.__class__.__name__}"}
    cached = agent.cached_answer(req)  # rendered before for this verdict: no thread
    if cached is not None:
        return cached
    try:
        return await blocking(lambda: agent.answer(req), ANSWER_SECONDS)
    except (Busy, Slow):
        return {"refused": "the agent is busy"}


def frame(answer: dict[str, Any]) -> bytes:
    """The answer as the client reads it (serve/client.py ``decode``)."""
    if "refused" in answer:
        return f"refused {answer['refused']}\n".encode(errors="replace")
    out, err = str(answer["stdout"]).encode(), str(answer["stderr"]).encode()
    head = f"ok {int(answer['rc'])} {float(answer['age_s']):.3f} {len(out)} {len(err)}\n"
    return head.encode() + out + err


def _unusable(path: Path) -> str | None:
    """Why ``path`` cannot be the socket, or None (a stale socket is removed)."""
    if len(os.fsencode(path)) > SUN_PATH_MAX:
        return f"{path} is longer than a unix socket path may be ({SUN_PATH_MAX} bytes)"
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISSOCK(st.st_mode):
        return f"{path} exists and is not a socket"
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(str(path))
        return f"another dolmen serve answers on {path} (one agent per state folder)"
    except OSError:
        pass
    finally:
        probe.close()
    path.unlink()  # a killed agent's: connect() to it is refused anyway
    return None
