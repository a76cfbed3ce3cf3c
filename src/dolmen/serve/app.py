"""The Starlette application of ``dolmen serve``: routes, roles, errors as JSON.

Reads (``/metrics``, ``GET /v1/...``) need a viewer token unless ``open_reads`` (the
default when listening on loopback only: whoever reaches 127.0.0.1 is on the node
already); ``/healthz`` and ``/readyz`` are always open (kubelet probes carry no token).
Writes need an operator token, admin the token list. Every handler that reads the disk
or the host runs in a worker with a deadline (serve/bounds.py); errors are one JSON
object ``{"error": ...}`` with the status that says what kind of error it was.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from dolmen.errors import AuditUnavailable, DolmenError, EnvironmentProblem
from dolmen.host import open_host
from dolmen.serve import reads, writes
from dolmen.serve.agent import Agent
from dolmen.serve.auth import Authenticator, Token, allows
from dolmen.serve.bounds import Bounded, Busy, Slow, TooLarge, blocking
from dolmen.serve.metrics import render_metrics

READ_SECONDS = 8.0  # inside the request bound of bounds.REQUEST_SECONDS
WRITE_SECONDS = 60.0  # a cancel waits for the job's grace; a tune apply writes files
PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8"

Handler = Callable[[Request], Awaitable[Response]]


@dataclass
class ServeState:
    """What the handlers share."""

    agent: Agent
    auth: Authenticator
    open_reads: bool = True
    jobs_state: str | None = None


def _error(status: int, why: str, **more: Any) -> JSONResponse:
    return JSONResponse({"error": why, **more}, status_code=status)


def _state(request: Request) -> ServeState:
    state: ServeState = request.app.state.serve
    return state


def guarded(
    role: str | None,
) -> Callable[[Callable[[Request, Token | None], Awaitable[Response]]], Handler]:
    """The handler behind a role check (None: open) and the error mapping."""

    def wrap(fn: Callable[[Request, Token | None], Awaitable[Response]]) -> Handler:
        async def handler(request: Request) -> Response:
            st = _state(request)
            token = st.auth.check(request.headers.get("authorization"))
            needed = role
            if role == "viewer" and st.open_reads:
                needed = None
            if needed is not None and token is None:
                return _error(401, "a bearer token is needed", needs=needed)
            if needed is not None and token is not None and not allows(token.role, needed):
                return _error(403, f"role {token.role} may not do this", needs=needed)
            try:
                return await fn(request, token)
            except reads.BadQuery as e:
                return _error(400, str(e))
            except reads.Absent as e:
                return _error(404, str(e))
            except TooLarge:
                return _error(413, "request body too large")
            except Busy:
                return _error(503, "too many slow reads in flight; retry")
            except Slow:
                return _error(504, "the read ran past its deadline (a hung device or disk?)")
            except writes.Conflict as e:
                return _error(409, e.message)
            except AuditUnavailable as e:
                return _error(503, f"refused, the audit log cannot be written: {e.message}")
            except EnvironmentProblem as e:
                return _error(503, e.message, hint=e.hint)
            except DolmenError as e:
                return _error(400, e.message, hint=e.hint)

        return handler

    return wrap


# --- open ---------------------------------------------------------------------------
@guarded(None)
async def healthz(request: Request, _t: Token | None) -> Response:
    return JSONResponse({"status": "alive"})


@guarded(None)
async def readyz(request: Request, _t: Token | None) -> Response:
    agent = _state(request).agent
    why = None
    if agent.store.degraded:
        why = f"read-only degraded mode: {agent.store.degraded}"
    elif agent.stuck() is not None:
        why = f"the quick-tier run is {agent.stuck():.0f} s past its deadline"
    elif agent.verdict is None:
        why = "no verdict yet" + (f" (last run: {agent.last_error})" if agent.last_error else "")
    if why:
        return JSONResponse({"status": "not ready", "reason": why}, status_code=503)
    return JSONResponse({"status": "ready", "verdict_age_s": round(agent.age() or 0.0, 3)})


# --- reads ----------------------------------------------------------------------------
@guarded("viewer")
async def metrics(request: Request, _t: Token | None) -> Response:
    agent = _state(request).agent
    stored = None
    if not agent.metrics_block:  # before this process's first run: the history's newest
        run = await blocking(agent.store.latest, READ_SECONDS)
        stored = run.prometheus if run is not None else None
    return Response(render_metrics(agent, stored), media_type=PROMETHEUS)


@guarded("viewer")
async def verdict_latest(request: Request, _t: Token | None) -> Response:
    text, run_id = await _latest(_state(request).agent)
    return Response(text, media_type="application/json", headers={"X-Dolmen-Run": run_id})


@guarded("viewer")
async def verdict_one(request: Request, _t: Token | None) -> Response:
    text = request.path_params["run_id"]
    if not text.isdigit():
        raise reads.BadQuery(f"run id must be a number, not {text!r}")
    run = await blocking(lambda: _state(request).agent.store.get(int(text)), READ_SECONDS)
    if run is None:
        raise reads.Absent(f"no run {text} in the history")
    return Response(run.verdict, media_type="application/json")


@guarded("viewer")
async def verdicts(request: Request, _t: Token | None) -> Response:
    store = _state(request).agent.store
    limit = reads.limit_of(request.query_params)
    before = reads.cursor_of(request.query_params, "before")
    runs = await blocking(lambda: store.page(limit, before), READ_SECONDS)
    nxt = str(runs[-1].id) if len(runs) == limit and runs[-1].id > 1 else None
    return JSONResponse({"items": [r.summary() for r in runs], "next": nxt})


@guarded("viewer")
async def findings(request: Request, _t: Token | None) -> Response:
    text, _id = await _latest(_state(request).agent)
    return JSONResponse(reads.findings(text, request.query_params))


async def _latest(agent: Agent) -> tuple[str, str]:
    """The latest verdict's JSON and its run id: the agent's own (the newest; run id
    ``unstored`` when the store could not keep it), else the history's newest."""
    if agent.verdict_json:
        return agent.verdict_json, "unstored" if agent.run_id is None else str(agent.run_id)
    run = await blocking(agent.store.latest, READ_SECONDS)
    if run is None:
        raise reads.Absent("no verdict yet: the agent's first run has not ended")
    return run.verdict, str(run.id)


def _on_host(
    fn: Callable[..., dict[str, Any]], *args: Any
) -> Callable[[Request, Token | None], Awaitable[Response]]:
    async def handler(request: Request, _t: Token | None) -> Response:
        agent = _state(request).agent

        def read() -> dict[str, Any]:
            with agent.open_host() as host:
                return fn(host, *[a(request) for a in args])

        return JSONResponse(await blocking(read, READ_SECONDS))

    return handler


facts = guarded("viewer")(_on_host(reads.facts, lambda r: r.query_params.get("only")))
stack = guarded("viewer")(_on_host(reads.stack))
tune = guarded("viewer")(_on_host(reads.tune))


@guarded("viewer")
async def jobs(request: Request, _t: Token | None) -> Response:
    state = _state(request).jobs_state
    return JSONResponse(
        await blocking(lambda: reads.jobs(state, request.query_params), READ_SECONDS)
    )


@guarded("viewer")
async def audit(request: Request, _t: Token | None) -> Response:
    return JSONResponse(await blocking(lambda: reads.audit(request.query_params), READ_SECONDS))


@guarded("viewer")
async def agent_status(request: Request, _t: Token | None) -> Response:
    return JSONResponse(_state(request).agent.status())


@guarded("admin")
async def tokens(request: Request, _t: Token | None) -> Response:
    from dolmen.serve.auth import public_rows

    auth = _state(request).auth
    return JSONResponse(
        {"items": await blocking(lambda: public_rows(auth.tokens.load()), READ_SECONDS)}
    )


# --- writes ---------------------------------------------------------------------------
async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    try:
        doc = json.loads(raw)
    except ValueError:
        raise reads.BadQuery("the body is not JSON") from None
    if not isinstance(doc, dict):
        raise reads.BadQuery("the body is a JSON object")
    return doc


def _principal(token: Token | None) -> str:
    assert token is not None  # guarded("operator") let no request without one through
    return f"serve:{token.principal}"


@guarded("operator")
async def drain(request: Request, token: Token | None) -> Response:
    doc = await _body(request)
    reason = doc.get("reason")
    if not isinstance(reason, str):
        raise reads.BadQuery('give {"reason": "why a person drains this node"}')
    who = _principal(token)
    return JSONResponse(await blocking(lambda: _live(writes.drain, reason, who), WRITE_SECONDS))


@guarded("operator")
async def resume(request: Request, token: Token | None) -> Response:
    who = _principal(token)
    return JSONResponse(await blocking(lambda: _live(writes.resume, who), WRITE_SECONDS))


@guarded("operator")
async def job_cancel(request: Request, token: Token | None) -> Response:
    job_id, state, who = (
        request.path_params["job_id"],
        _state(request).jobs_state,
        _principal(token),
    )
    return JSONResponse(
        await blocking(lambda: writes.cancel_job(state, job_id, who), WRITE_SECONDS)
    )


@guarded("operator")
async def tune_apply(request: Request, token: Token | None) -> Response:
    doc = await _body(request)
    profile = doc.get("profile")
    if not isinstance(profile, str) or not profile:
        raise reads.BadQuery('give {"profile": "<name>"} (`dolmen tune profiles` lists them)')
    agent, who = _state(request).agent, _principal(token)

    def apply() -> dict[str, Any]:
        with agent.open_host() as host:
            return writes.tune_apply(host, profile, who)

    return JSONResponse(await blocking(apply, WRITE_SECONDS))


def _live(fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """Slurm's commands run on this machine, whatever host the agent reads (drain.py)."""
    with open_host(None) as host:
        return fn(host, *args)


def _fleet(folder: Path) -> Any:
    """The fleet dashboard of ``folder`` (dolmen.fleet.web, iface of issue 14)."""
    from dolmen.errors import UsageError

    try:
        from dolmen.fleet.web import make_app as fleet_app  # type: ignore[import-not-found,unused-ignore]
    except ImportError as e:
        raise UsageError(f"--fleet: the fleet dashboard is not in this dolmen ({e})") from None
    return fleet_app(folder)


def make_app(state: ServeState, *, fleet: Path | None = None, start_agent: bool = True) -> Bounded:
    """The ASGI application: the routes, the agent started with it, every request bounded."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        from dolmen.serve.unixsock import serve_socket

        if start_agent:
            state.agent.start()
        closer = await serve_socket(state.agent)
        try:
            yield
        finally:
            state.agent.stop()
            await closer()

    routes = [
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        Route("/metrics", metrics),
        Route("/v1/agent", agent_status),
        Route("/v1/verdict/latest", verdict_latest),
        Route("/v1/verdicts", verdicts),
        Route("/v1/verdicts/{run_id}", verdict_one),
        Route("/v1/findings", findings),
        Route("/v1/facts", facts),
        Route("/v1/stack", stack),
        Route("/v1/tune", tune),
        Route("/v1/jobs", jobs),
        Route("/v1/audit", audit),
        Route("/v1/tokens", tokens),
        Route("/v1/node/drain", drain, methods=["POST"]),
        Route("/v1/node/resume", resume, methods=["POST"]),
        Route("/v1/jobs/{job_id}/cancel", job_cancel, methods=["POST"]),
        Route("/v1/tune/apply", tune_apply, methods=["POST"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.serve = state
    if fleet is not None:
        app.mount("/fleet", _fleet(fleet))

    return Bounded(app)
