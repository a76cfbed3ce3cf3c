"""The dashboard's jobs page (pure: rows in, HTML out): the jobs of the node serving the
dashboard (its local jobs store, handed in by ``dolmen serve --fleet``), and each node's
jobs as its agent answered ``GET /v1/jobs`` when ``fleet collect`` read it (the newest
collection that asked). State, restarts, nodes, age; a job's state is text and colour.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from html import escape
from typing import Any

from dolmen.compat import UTC
from dolmen.fleet.pages import badge

# a job's state -> the status colour it is shown in (pages.COLOURS, contrast-checked)
STATE_COLOUR = {
    "running": "pass",
    "completed": "pass",
    "pending": "unknown",
    "restarting": "warn",
    "failed": "fail",
    "cancelled": "skip",
}
Rows = Sequence[Mapping[str, Any]]


def node_jobs(manifests: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, Rows | str]]:
    """Node -> (collection, its agent's job rows or why they could not be read), from the
    newest collection (``manifests`` newest first) that asked that node's agent."""
    out: dict[str, tuple[str, Rows | str]] = {}
    for m in manifests:
        for item in m.get("items") or ():
            if not isinstance(item, dict) or not isinstance(item.get("node"), str):
                continue
            node = item["node"]
            if node in out:
                continue
            if isinstance(item.get("jobs"), list):
                out[node] = (str(m.get("collection")), item["jobs"])
            elif isinstance(item.get("jobs_error"), str):
                out[node] = (str(m.get("collection")), item["jobs_error"])
    return dict(sorted(out.items()))


def page(
    local: Rows | str | None, nodes: Mapping[str, tuple[str, Rows | str]], now: datetime
) -> str:
    """The jobs page. ``local``: this node's jobs, or why they could not be read, or None
    when the dashboard was given no jobs store."""
    parts = ["<h2>This node's jobs</h2>"]
    if local is None:
        parts.append(
            "<p>No jobs store was given to this dashboard (<code>dolmen serve --fleet</code> "
            "shows the serving node's).</p>"
        )
    else:
        parts.append(_table("local-jobs", "Jobs of this node's jobs store", local, now))
    parts.append("<h2>Jobs on the nodes</h2>")
    if not nodes:
        parts.append(
            "<p>No node's jobs in this store: <code>dolmen fleet collect http://NODE:9405"
            "</code> asks each agent for its jobs with its verdict.</p>"
        )
    for node, (collection, rows) in nodes.items():
        name = escape(node)
        parts.append(
            f'<h3><a href="node/{name}">{name}</a></h3>'
            f"<p>As its agent answered in collection {escape(collection)}.</p>"
            + _table(f"jobs-{name}", f"Jobs of {name}", rows, now)
        )
    return "".join(parts)


def _table(ident: str, caption: str, rows: Rows | str, now: datetime) -> str:
    if isinstance(rows, str):
        return f'<p id="{ident}">Could not be read: {escape(rows)}.</p>'
    if not rows:
        return f'<p id="{ident}">No jobs.</p>'
    head = "".join(
        f'<th scope="col">{h}</th>'
        for h in ("Job", "Name", "State", "Restarts", "Nodes", "Age", "Reason")
    )
    body = []
    for r in rows:
        state = str(r.get("state"))
        listed = r.get("nodes")
        nodes = listed if isinstance(listed, list) else []
        cells = (
            escape(str(r.get("name") or "")),
            badge(STATE_COLOUR.get(state, "unknown"), state),
            escape(str(r.get("restarts", ""))),
            escape(", ".join(str(n) for n in nodes) or "-"),
            escape(age(r.get("created"), now)),
            escape(str(r.get("reason") or "")),
        )
        body.append(
            f'<tr data-state="{escape(state)}"><th scope="row">{escape(str(r.get("job_id")))}'
            f"</th>{''.join(f'<td>{c}</td>' for c in cells)}</tr>"
        )
    return (
        f'<table id="{ident}"><caption>{escape(caption)}</caption><thead><tr>{head}</tr>'
        f"</thead><tbody>{''.join(body)}</tbody></table>"
    )


def age(created: object, now: datetime) -> str:
    """``3h20m`` since an ISO time (``2026-12-01T16:00:00Z``); ``unknown`` when there is
    none or it does not parse (an agent from before ``created`` was served)."""
    from dolmen.compat import fromisoformat
    from dolmen.values.duration import human

    if not isinstance(created, str):
        return "unknown"
    try:
        then = fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return "unknown"
    seconds = (now - (then if then.tzinfo else then.replace(tzinfo=UTC))).total_seconds()
    return human(seconds) if seconds >= 0 else "in the future (clocks differ)"
