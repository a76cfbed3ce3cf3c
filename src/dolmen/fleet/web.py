"""The fleet dashboard: ``make_app(fleet_dir)``, a Starlette app over the fleet store.

``dolmen serve --fleet DIR`` mounts it under ``/fleet``; its tests run it alone under
uvicorn. Every request reads the store afresh (``fleet collect`` writes it atomically,
so a page sees whole files), and every link is relative: ``node/<name>``, ``jobs`` and
``audit`` from the grid, ``../`` back from a node. Pages: pages.py, the node page's
topology section topology.py, the jobs page jobs_page.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from html import escape
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse
from starlette.routing import Route

from dolmen.compat import UTC
from dolmen.errors import DolmenError
from dolmen.fleet import jobs_page, pages, topology
from dolmen.fleet import report as rep
from dolmen.fleet.doc import node_name_problem
from dolmen.fleet.store import FleetStore

Jobs = Callable[[], Sequence[Mapping[str, Any]]]


def make_app(fleet_dir: Path, *, jobs: Jobs | None = None) -> Starlette:
    """The dashboard over the store in ``fleet_dir`` (which may not exist yet); ``jobs``
    lists the serving node's jobs (``/v1/jobs``'s rows), None when it has no jobs store."""
    store = FleetStore(fleet_dir)

    def grid(request: Request) -> HTMLResponse:
        latest, problems = store.latest()
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        doc = rep.build(latest, None, store_problems=problems, generated=now)
        rows = [dict(r, _doc=latest[r["node"]].doc) for r in doc["nodes"]]
        body = pages.grid(rows, doc)
        if problems:
            body += (
                "<h2>Store problems</h2><ul>"
                + "".join(f"<li>{escape(p)}</li>" for p in problems)
                + "</ul>"
            )
        return HTMLResponse(pages.page("Fleet", body, home="./", script=pages.FILTER_JS))

    def node(request: Request) -> HTMLResponse:
        name = str(request.path_params["name"])
        latest, _ = store.latest()
        if node_name_problem(name) or name not in latest:
            body = f"<p>No verdict of a node {escape(name)!s} in this store.</p>"
            return HTMLResponse(pages.page("Unknown node", body, home="../"), status_code=404)
        history, found = [], None
        doc = latest[name].doc
        if topology.carries(doc):
            found = (latest[name].collection, doc)
        for path in reversed(store.history(name)):  # newest first
            got = store.load(name, path)
            history.append((path.stem, got if isinstance(got, str) else got.doc["status"]))
            if found is None and not isinstance(got, str) and topology.carries(got.doc):
                found = (got.collection, got.doc)  # a standard run's, when the latest is quick
        history = [(c, s if s in pages.COLOURS else "unknown") for c, s in history]
        body = pages.node(name, doc, history[:20], topology.section(doc, found))
        return HTMLResponse(pages.page(f"Node {name}", body, home="../"))

    def jobs_view(request: Request) -> HTMLResponse:
        local: Sequence[Mapping[str, Any]] | str | None = None
        if jobs is not None:
            try:
                local = jobs()
            except DolmenError as e:  # a lost or locked jobs database: said, not a 500
                local = e.message
        nodes = jobs_page.node_jobs(store.manifests())
        body = jobs_page.page(local, nodes, datetime.now(UTC))
        return HTMLResponse(pages.page("Jobs", body, home="./"))

    def audit(request: Request) -> HTMLResponse:
        return HTMLResponse(
            pages.page("Audit trail", pages.audit(store.manifests(), store.check_file), home="./")
        )

    def healthz(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok\n")

    return Starlette(
        routes=[
            Route("/", grid),
            Route("/node/{name}", node),
            Route("/jobs", jobs_view),
            Route("/audit", audit),
            Route("/healthz", healthz),
        ]
    )
