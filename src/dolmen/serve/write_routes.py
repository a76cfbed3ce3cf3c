"""The write handlers of ``dolmen serve`` (operator): drain, resume, job cancel, tune
apply, each through serve/writes.py, in a worker thread with a deadline."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from dolmen.host import open_host
from dolmen.serve import reads, writes
from dolmen.serve.auth import Token
from dolmen.serve.bounds import blocking
from dolmen.serve.guard import guarded, state_of

WRITE_SECONDS = 60.0  # a cancel waits for the job's grace; a tune apply writes files


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
        state_of(request).jobs_state,
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
    agent, who = state_of(request).agent, _principal(token)

    def apply() -> dict[str, Any]:
        with agent.open_host() as host:
            return writes.tune_apply(host, profile, who)

    return JSONResponse(await blocking(apply, WRITE_SECONDS))


def _live(fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """Slurm's commands run on this machine, whatever host the agent reads (drain.py)."""
    with open_host(None) as host:
        return fn(host, *args)
