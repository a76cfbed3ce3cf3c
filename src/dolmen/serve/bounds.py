"""Every request bounded: its body's size, its time, and the slow work it may start.

``Bounded`` is pure ASGI middleware: a body over ``max_body`` is refused with 413 (from
its Content-Length, or while it streams in), a request that has not answered within
``seconds`` gets 503 (the client that sends its body slowly included). ``blocking`` runs
the reads that touch the disk or the host in a worker thread with a deadline and at most
``SLOW_AT_ONCE`` at a time: a read that hangs (NVML in the kernel, a dead NFS mount under
the state folder) costs one worker, never the event loop, and a flood of them is 503.
uvicorn's own limits (header size, keep-alive, connection count) are in server.py.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, TypeVar

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
T = TypeVar("T")

MAX_BODY = 64 * 1024
REQUEST_SECONDS = 10.0
SLOW_AT_ONCE = 16


class TooLarge(Exception):
    """The body went past the limit."""


class Bounded:
    """The middleware (module docstring)."""

    def __init__(self, app: ASGIApp, *, max_body: int = MAX_BODY, seconds: float = REQUEST_SECONDS):
        self.app = app
        self.max_body = max_body
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length" and (not value.isdigit() or int(value) > self.max_body):
                await _error(send, 413, f"request body over {self.max_body} bytes")
                return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_body:
                raise TooLarge
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            await asyncio.wait_for(self.app(scope, counted, tracked), self.seconds)
        except TooLarge:
            if not started:
                await _error(send, 413, f"request body over {self.max_body} bytes")
        except (TimeoutError, asyncio.TimeoutError):  # the same class from 3.11 on
            if not started:
                await _error(send, 503, f"request took longer than {self.seconds:g} s")


async def _error(send: Send, status: int, why: str) -> None:
    body = json.dumps({"error": why}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class Busy(Exception):
    """Too many slow reads in flight already."""


class Slow(Exception):
    """A slow read ran past its deadline (it goes on in its worker, unwaited)."""


_slots = threading.BoundedSemaphore(SLOW_AT_ONCE)


async def blocking(fn: Callable[[], T], seconds: float) -> T:
    """``fn()`` in a worker thread, within ``seconds``; Busy or Slow otherwise."""
    if not _slots.acquire(blocking=False):
        raise Busy
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def work() -> None:
        try:
            result = fn()
        except BaseException as e:  # handed to the waiting request
            loop.call_soon_threadsafe(_settle, done, None, e)
        else:
            loop.call_soon_threadsafe(_settle, done, result, None)
        finally:
            _slots.release()  # a hung read keeps its slot until it returns

    threading.Thread(target=work, name="dolmen-serve-read", daemon=True).start()
    try:
        return await asyncio.wait_for(asyncio.shield(done), seconds)
    except (TimeoutError, asyncio.TimeoutError):  # the same class from 3.11 on
        raise Slow from None


def _settle(fut: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if fut.done():
        return
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(result)
