"""The read API's sources, as plain functions of the server's state (each runs in a
worker thread with a deadline, serve/bounds.py): pages of the history, the latest
verdict's findings, facts, jobs, audit events, tune state.

Pages are ``{"items": [...], "next": cursor | null}``: ``limit`` (1 to 500, default 50)
and the cursor of the previous page (``before`` for the history, newest first; ``after``
for findings, jobs and audit events, in their order). A source that is not there says
so (404 with the reason), never an empty list that would read as "none".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dolmen.host import Host

LIMIT_DEFAULT = 50
LIMIT_MAX = 500


class BadQuery(ValueError):
    """A query parameter the endpoint does not take (400)."""


class Absent(LookupError):
    """What the endpoint serves is not there (404, with the reason)."""


def limit_of(query: Mapping[str, str]) -> int:
    """``limit``, checked."""
    text = query.get("limit", str(LIMIT_DEFAULT))
    if not text.isdigit() or not 1 <= int(text) <= LIMIT_MAX:
        raise BadQuery(f"limit must be a whole number from 1 to {LIMIT_MAX}, not {text!r}")
    return int(text)


def cursor_of(query: Mapping[str, str], name: str) -> int | None:
    """A numeric cursor (``before``/``after``), checked."""
    text = query.get(name)
    if text is None:
        return None
    if not text.isdigit():
        raise BadQuery(f"{name} must be the cursor a previous page gave, not {text!r}")
    return int(text)


def page(items: list[Any], limit: int, offset: int) -> dict[str, Any]:
    """One page of a list held whole (findings, jobs), by position."""
    chunk = items[offset : offset + limit]
    more = offset + limit < len(items)
    return {"items": chunk, "next": str(offset + limit) if more else None}


def findings(verdict_json: str, query: Mapping[str, str]) -> dict[str, Any]:
    """The latest verdict's findings, optionally of some statuses (``status=fail,warn``)."""
    rows = json.loads(verdict_json)["findings"]
    wanted = {s for s in query.get("status", "").split(",") if s}
    known = {"pass", "fail", "warn", "unknown", "error", "skip"}
    if wanted - known:
        raise BadQuery(f"status: {sorted(wanted - known)[0]!r}; valid: {', '.join(sorted(known))}")
    if wanted:
        rows = [r for r in rows if r["status"] in wanted]
    return page(rows, limit_of(query), cursor_of(query, "after") or 0)


def facts(host: Host, only: str | None) -> dict[str, Any]:
    """The ``dolmen.facts/1`` document of the agent's host (``only=gpu,os``)."""
    from dolmen.facts import SUBSYSTEMS, FactStore, to_jsonable

    names = [n for n in (only or "").split(",") if n] or None
    bad = [n for n in names or () if n not in SUBSYSTEMS]
    if bad:
        raise BadQuery(f"unknown subsystem {bad[0]!r}; valid: {', '.join(SUBSYSTEMS)}")
    collected = FactStore(host).collect(names)
    return {
        "schema": "dolmen.facts/1",
        "host": host.describe(),
        **{k: to_jsonable(v) for k, v in collected.items()},
    }


def jobs(state: str | None, query: Mapping[str, str]) -> dict[str, Any]:
    """The local backend's jobs, newest first (``dolmen jobs list --backend local``)."""
    return page(job_rows(state), limit_of(query), cursor_of(query, "after") or 0)


def job_rows(state: str | None) -> list[dict[str, Any]]:
    """Every local job as ``/v1/jobs`` pages it, with ``created`` (UTC, ISO 8601): the
    fleet dashboard's jobs page shows its age."""
    from datetime import datetime

    from dolmen.compat import UTC
    from dolmen.jobs.local.backend import LocalBackend

    out = []
    for job, st in LocalBackend(state).entries():
        iso = datetime.fromtimestamp(job.created, UTC).isoformat(timespec="seconds")
        out.append({**st.to_json(details=False), "created": iso.replace("+00:00", "Z")})
    return out


def audit(query: Mapping[str, str]) -> dict[str, Any]:
    """Audit events in chain order after sequence ``after`` (``action=tune.*`` filters)."""
    import fnmatch

    from dolmen.audit.reader import read_entries
    from dolmen.audit.settings import audit_settings

    path = audit_settings().path
    if not path.exists():
        raise Absent(f"no audit log at {path} (no change was recorded on this host yet)")
    limit, after = limit_of(query), cursor_of(query, "after") or 0
    pattern = query.get("action")
    items: list[Any] = []
    last = after
    for entry in read_entries(path, after=after):
        if entry.event is None:
            continue  # `dolmen audit verify` names the broken lines
        last = entry.event.sequence or last
        if pattern and not fnmatch.fnmatchcase(entry.event.action, pattern):
            continue
        items.append(json.loads(entry.line))
        if len(items) >= limit:
            return {"items": items, "next": str(last)}
    return {"items": items, "next": None}


def tune(host: Host) -> dict[str, Any]:
    """The ``dolmen.tune.status/1`` document (``dolmen tune status --json``)."""
    from dolmen.tune.verify import status_doc, tune_status

    return status_doc(host, tune_status(host))


def stack(host: Host) -> dict[str, Any]:
    """The software stack as the facts read it (driver, CUDA, libraries, containers)."""
    from dolmen.facts import FactStore, to_jsonable

    value = FactStore(host).collect(["stack"])["stack"]
    return {"host": host.describe(), "stack": to_jsonable(value)}
