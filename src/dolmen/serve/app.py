"""The Starlette application of ``dolmen serve``: the routes, the read handlers, the
agent and its socket started with it (roles and errors: serve/guard.py; the writes:
serve/write_routes.py).

Every handler that reads the disk or the host runs in a worker with a deadline
(serve/bounds.py); what the agent holds in memory (the latest verdict, its metrics) is
served from the event loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from dolmen.serve import reads
from dolmen.serve.agent import Agent
from dolmen.serve.auth import Token
from dolmen.serve.bounds import Bounded, blocking
from dolmen.serve.guard import ServeState, guarded, guarded_app, state_of
from dolmen.serve.metrics import render_metrics
from dolmen.serve.write_routes import drain, job_cancel, resume, tune_apply

READ_SECONDS = 8.0  # inside the request bound of bounds.REQUEST_SECONDS
PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8"
__all__ = ["ServeState", "make_app"]


# --- open ---------------------------------------------------------------------------
@guarded(None)
async def healthz(request: Request, _t: Token | None) -> Response:
    return JSONResponse({"status": "alive"})


@guarded(None)
async def readyz(request: Request, _t: Token | None) -> Response:
    agent = state_of(request).agent
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
    agent = state_of(request).agent
    stored = None
    if not agent.metrics_block:  # before this process's first run: the history's newest
        run = await blocking(agent.store.latest, READ_SECONDS)
        stored = run.prometheus if run is not None else None
    return Response(render_metrics(agent, stored), media_type=PROMETHEUS)


@guarded("viewer")
async def verdict_latest(request: Request, _t: Token | None) -> Response:
    text, run_id = await _latest(state_of(request).agent)
    return Response(text, media_type="application/json", headers={"X-Dolmen-Run": run_id})


@guarded("viewer")
async def verdict_one(request: Request, _t: Token | None) -> Response:
    text = request.path_params["run_id"]
    if not text.isdigit():
        raise reads.BadQuery(f"run id must be a number, not {text!r}")
    run = await blocking(lambda: state_of(request).agent.store.get(int(text)), READ_SECONDS)
    if run is None:
        raise reads.Absent(f"no run {text} in the history")
    return Response(run.verdict, media_type="application/json")


@guarded("viewer")
async def verdicts(request: Request, _t: Token | None) -> Response:
    store = state_of(request).agent.store
    limit = reads.limit_of(request.query_params)
    before = reads.cursor_of(request.query_params, "before")
    runs = await blocking(lambda: store.page(limit, before), READ_SECONDS)
    nxt = str(runs[-1].id) if len(runs) == limit and runs[-1].id > 1 else None
    return JSONResponse({"items": [r.summary() for r in runs], "next": nxt})


@guarded("viewer")
async def findings(request: Request, _t: Token | None) -> Response:
    text, _id = await _latest(state_of(request).agent)
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
        agent = state_of(request).agent

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
    state = state_of(request).jobs_state
    return JSONResponse(
        await blocking(lambda: reads.jobs(state, request.query_params), READ_SECONDS)
    )


@guarded("viewer")
async def audit(request: Request, _t: Token | None) -> Response:
    return JSONResponse(await blocking(lambda: reads.audit(request.query_params), READ_SECONDS))


@guarded("viewer")
async def agent_status(request: Request, _t: Token | None) -> Response:
    return JSONResponse(state_of(request).agent.status())


@guarded("admin")
async def tokens(request: Request, _t: Token | None) -> Response:
    from dolmen.serve.auth import public_rows

    auth = state_of(request).auth
    return JSONResponse(
        {"items": await blocking(lambda: public_rows(auth.tokens.load()), READ_SECONDS)}
    )


def _fleet(folder: Path, jobs_state: str | None) -> Any:
    """The fleet dashboard of ``folder`` (dolmen.fleet.web), its jobs page showing this
    node's local jobs (the rows of /v1/jobs)."""
    from dolmen.errors import UsageError

    try:
        from dolmen.fleet.web import make_app as fleet_app  # type: ignore[import-not-found,unused-ignore]
    except ImportError as e:
        raise UsageError(f"--fleet: the fleet dashboard is not in this dolmen ({e})") from None
    return fleet_app(folder, jobs=lambda: reads.job_rows(jobs_state))


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
        # the dashboard shows verdicts and jobs: the reads' role check guards it too
        app.mount("/fleet", guarded_app(_fleet(fleet, state.jobs_state), state))

    return Bounded(app)
