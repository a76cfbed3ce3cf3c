"""The fleet dashboard: ``make_app(fleet_dir)``, a Starlette app over the fleet store.

``dolmen serve --fleet DIR`` mounts it under ``/fleet``; its tests run it alone under
uvicorn. Every request reads the store afresh (``fleet collect`` writes it atomically,
so a page sees whole files), and every link is relative: ``node/<name>`` and ``audit``
from the grid, ``../`` back from a node. Pages: pages.py.
"""

from __future__ import annotations

from datetime import datetime
from html import escape
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse
from starlette.routing import Route

from dolmen.compat import UTC
from dolmen.fleet import pages
from dolmen.fleet import report as rep
from dolmen.fleet.doc import node_name_problem
from dolmen.fleet.store import FleetStore


def make_app(fleet_dir: Path) -> Starlette:
    """The dashboard over the store in ``fleet_dir`` (which may not exist yet)."""
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
        history = []
        for path in store.history(name):
            got = store.load(name, path)
            history.append((path.stem, got if isinstance(got, str) else got.doc["status"]))
        history = [(c, s if s in pages.COLOURS else "unknown") for c, s in reversed(history)]
        body = pages.node(name, latest[name].doc, history[:20])
        return HTMLResponse(pages.page(f"Node {name}", body, home="../"))

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
            Route("/audit", audit),
            Route("/healthz", healthz),
        ]
    )
