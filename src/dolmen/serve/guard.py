"""The role check and the error mapping every handler of ``dolmen serve`` goes through,
and the state the handlers share.

Reads need a viewer token unless ``open_reads`` (the default when listening on loopback
only: whoever reaches 127.0.0.1 is on the node already); ``/healthz`` and ``/readyz``
are always open (kubelet probes carry no token). Writes need an operator token, admin
the token list. Errors are one JSON object ``{"error": ...}`` with the status that says
what kind of error it was.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from dolmen.errors import AuditUnavailable, DolmenError, EnvironmentProblem
from dolmen.serve import reads, writes
from dolmen.serve.agent import Agent
from dolmen.serve.auth import Authenticator, Token, allows
from dolmen.serve.bounds import Busy, Slow, TooLarge

Handler = Callable[[Request], Awaitable[Response]]
Asgi = Callable[[Any, Any, Any], Awaitable[None]]


@dataclass
class ServeState:
    """What the handlers share."""

    agent: Agent
    auth: Authenticator
    open_reads: bool = True
    jobs_state: str | None = None


def error(status: int, why: str, **more: Any) -> JSONResponse:
    return JSONResponse({"error": why, **more}, status_code=status)


def state_of(request: Request) -> ServeState:
    state: ServeState = request.app.state.serve
    return state


def admit(
    state: ServeState, authorization: str | None, role: str | None
) -> tuple[Token | None, JSONResponse | None]:
    """The request's token (None: none or not a valid one), and the 401 or 403 answer when
    it may not do what ``role`` allows (None: open), else None. Reads (``viewer``) are
    open when ``open_reads`` is. The token file is checked once per request."""
    token = state.auth.check(authorization)
    needed = None if role == "viewer" and state.open_reads else role
    if needed is not None and token is None:
        return token, error(401, "a bearer token is needed", needs=needed)
    if needed is not None and token is not None and not allows(token.role, needed):
        return token, error(403, f"role {token.role} may not do this", needs=needed)
    return token, None


def guarded_app(app: Asgi, state: ServeState, role: str = "viewer") -> Asgi:
    """A mounted application (the fleet dashboard) behind the same role check as the API's
    reads: it shows verdicts and jobs, so it is closed whenever reads are."""

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            raw = dict(scope.get("headers") or ()).get(b"authorization")
            _, no = admit(state, raw.decode("latin-1") if raw is not None else None, role)
            if no is not None:
                await no(scope, receive, send)
                return
        await app(scope, receive, send)

    return asgi


def guarded(
    role: str | None,
) -> Callable[[Callable[[Request, Token | None], Awaitable[Response]]], Handler]:
    """The handler behind a role check (None: open) and the error mapping."""

    def wrap(fn: Callable[[Request, Token | None], Awaitable[Response]]) -> Handler:
        async def handler(request: Request) -> Response:
            token, no = admit(state_of(request), request.headers.get("authorization"), role)
            if no is not None:
                return no
            try:
                return await fn(request, token)
            except reads.BadQuery as e:
                return error(400, str(e))
            except reads.Absent as e:
                return error(404, str(e))
            except TooLarge:
                return error(413, "request body too large")
            except Busy:
                return error(503, "too many slow reads in flight; retry")
            except Slow:
                return error(504, "the read ran past its deadline (a hung device or disk?)")
            except writes.Conflict as e:
                return error(409, e.message)
            except AuditUnavailable as e:
                return error(503, f"refused, the audit log cannot be written: {e.message}")
            except EnvironmentProblem as e:
                return error(503, e.message, hint=e.hint)
            except DolmenError as e:
                return error(400, e.message, hint=e.hint)

        return handler

    return wrap
