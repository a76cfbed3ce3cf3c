"""The dashboard's pages as HTML text (pure: a report row or a verdict in, a page out).

Server-rendered, no build toolchain, one small script (the grid's filter). Every link is
relative (the app is mounted under ``/fleet``). Status is colour AND text, and every
colour pair clears WCAG's 4.5:1 contrast (the browser test computes it). Everything
from a verdict is escaped: verdicts come from other machines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from html import escape
from typing import Any

from dolmen.fleet.doc import obj

# status -> (background, text colour); contrast >= 4.5:1 each (tests/fleet/test_web_browser)
COLOURS = {
    "pass": ("#d3f0da", "#0b3d17"),
    "healthy": ("#d3f0da", "#0b3d17"),
    "warn": ("#fff0b3", "#4d3800"),
    "degraded": ("#fff0b3", "#4d3800"),
    "fail": ("#a3001b", "#ffffff"),
    "unhealthy": ("#a3001b", "#ffffff"),
    "error": ("#4a148c", "#ffffff"),
    "unknown": ("#dcdcdc", "#1f1f1f"),
    "undecided": ("#dcdcdc", "#1f1f1f"),
    "skip": ("#f2f2f2", "#3a3a3a"),
    "absent": ("#ffffff", "#4a4a4a"),
}
_RANK = {"fail": 0, "error": 1, "unknown": 2, "warn": 3, "pass": 4, "skip": 5}

_STYLE = "\n".join(
    [
        "body{font-family:system-ui,sans-serif;margin:1.5rem;color:#111;background:#fff}",
        "table{border-collapse:collapse;margin:0.5rem 0 1.5rem}",
        "th,td{border:1px solid #999;padding:0.3rem 0.6rem;text-align:left}",
        "caption{text-align:left;font-weight:bold;padding:0.3rem 0}",
        "nav a{margin-right:1rem}",
        "a{color:#0645ad}",
        ".scroll{overflow-x:auto;max-width:100%}",
        ".matrix th,.matrix td{padding:0.15rem 0.3rem;font-size:0.85rem;white-space:nowrap}",
        *(f".s-{k}{{background:{bg};color:{fg}}}" for k, (bg, fg) in COLOURS.items()),
        ".s-fail a,.s-unhealthy a,.s-error a{color:#ffffff}",
    ]
)

_FILTER_JS = """
document.getElementById('only-problems').addEventListener('change', function (e) {
  document.querySelectorAll('tr[data-status]').forEach(function (row) {
    var ok = row.dataset.status === 'healthy';
    row.hidden = e.target.checked && ok;
  });
});
"""


def page(title: str, body: str, *, home: str, script: str = "") -> str:
    """A whole page: ``home`` is the relative link back to the grid."""
    js = f"<script>{script}</script>" if script else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} - dolmen fleet</title><style>{_STYLE}</style></head>"
        f'<body><nav aria-label="fleet"><a href="{home}">Fleet</a>'
        f'<a href="{home}jobs">Jobs</a><a href="{home}audit">Audit trail</a></nav>'
        f"<main><h1>{escape(title)}</h1>"
        f"{body}</main>{js}</body></html>\n"
    )


def badge(status: str, text: str | None = None) -> str:
    """A status as coloured text (the text says it; the colour repeats it)."""
    return f'<span class="status s-{escape(status)}">{escape(text or status)}</span>'


def worst_by_category(doc: Mapping[str, Any]) -> dict[str, tuple[str, int]]:
    """Category -> (worst status, how many findings have it)."""
    out: dict[str, tuple[str, int]] = {}
    for f in doc.get("findings") or ():
        cat = str(f.get("category") or f["check"].split(".", 1)[0])
        st = f["status"]
        if st == "fail" and f.get("gating") is False:
            st = "warn"
        cur = out.get(cat)
        if cur is None or _RANK[st] < _RANK[cur[0]]:
            out[cat] = (st, 1)
        elif st == cur[0]:
            out[cat] = (st, cur[1] + 1)
    return out


def grid(rows: Sequence[Mapping[str, Any]], report: Mapping[str, Any]) -> str:
    """The fleet grid: nodes x categories, then the outliers."""
    docs = {r["node"]: r["_doc"] for r in rows}
    cats = sorted({c for d in docs.values() for c in worst_by_category(d)})
    s = report["summary"]
    head = (
        f"<p>{s['nodes']} nodes: {s['healthy']} healthy, {s['degraded']} degraded, "
        f"{s['unhealthy']} unhealthy, {s['undecided']} undecided.</p>"
        '<p><input type="checkbox" id="only-problems">'
        ' <label for="only-problems">Show only nodes with problems</label></p>'
    )
    if not rows:
        return head + "<p>The store holds no verdict yet (dolmen fleet collect).</p>"
    th = "".join(f'<th scope="col">{escape(c)}</th>' for c in cats)
    lines = [
        '<table id="grid"><caption>Nodes by check category (worst status, findings)</caption>',
        f'<thead><tr><th scope="col">Node</th><th scope="col">Verdict</th>{th}</tr></thead><tbody>',
    ]
    for r in rows:
        worst = worst_by_category(docs[r["node"]])
        cells = []
        for c in cats:
            st, n = worst.get(c, ("absent", 0))
            text = f"{st} {n}" if st in ("fail", "error", "unknown", "warn") else st
            cells.append(f'<td class="s-{st}" data-category="{escape(c)}">{escape(text)}</td>')
        name = escape(r["node"])
        lines.append(
            f'<tr data-status="{escape(r["status"])}"><th scope="row">'
            f'<a href="node/{name}">{name}</a></th>'
            f'<td class="s-{escape(r["status"])}">{escape(r["status"])}</td>{"".join(cells)}</tr>'
        )
    lines.append("</tbody></table>")
    return head + "".join(lines) + outliers(report)


def outliers(report: Mapping[str, Any]) -> str:
    """The outliers against the fleet's majority, as a list."""
    items = [
        f'<li><a href="node/{escape(o["node"])}">{escape(o["node"])}</a>: {escape(o["why"])}</li>'
        for o in report["outliers"]
    ]
    body = f'<ul id="outliers">{"".join(items)}</ul>' if items else "<p>None.</p>"
    return f"<h2>Outliers against the fleet</h2>{body}"


def node(
    name: str,
    doc: Mapping[str, Any],
    history: Iterable[tuple[str, str]],
    topology: str = "",
) -> str:
    """A node's page: verdict, GPUs with their findings, the topology section (HTML made
    by fleet/topology.py), recent Xids, tune/stack state."""
    findings = [f for f in doc.get("findings") or () if isinstance(f, dict)]
    parts = [
        f"<p>Verdict: {badge(doc['status'])} at level {escape(str(doc.get('level')))}, "
        f"started {escape(str(doc.get('started')))}.</p>",
        _gpus(doc, findings),
        topology,
        _xids(findings),
        _state("Tune state", [f for f in findings if f["check"].startswith("tuning.")]),
        _state("Stack state", [f for f in findings if f["check"].startswith("stack.")]),
        _state(
            "Other problems",
            [
                f
                for f in findings
                if f["status"] in ("fail", "error", "unknown", "warn")
                and not f["subject"].startswith("gpu:")
                and not f["check"].startswith(("tuning.", "stack."))
            ],
        ),
    ]
    hist = "".join(f"<li>{escape(c)}: {badge(st)}</li>" for c, st in history)
    parts.append(f'<h2>History</h2><ul id="history">{hist}</ul>')
    return "".join(parts)


def _gpus(doc: Mapping[str, Any], findings: Sequence[Mapping[str, Any]]) -> str:
    gpus = obj(obj(doc, "inventory"), "gpus")
    devices = [d for d in gpus.get("devices") or () if isinstance(d, dict)]
    if not devices:
        why = gpus.get("error") or gpus.get("state") or "no GPU inventory in this verdict"
        return f"<h2>GPUs</h2><p>No GPU listed: {escape(str(why))}.</p>"
    rows = []
    for d in devices:
        bus = str(d.get("bus_id") or "")
        mine = [
            f
            for f in findings
            if f["subject"].lower() == f"gpu:{bus}".lower()
            and f["status"] in ("fail", "error", "unknown", "warn")
        ]
        mine.sort(key=lambda f: (_RANK[f["status"]], f["check"]))
        worst = mine[0]["status"] if mine else "pass"
        items = "".join(
            f"<li>{badge(f['status'])} {escape(f['check'])}: {escape(str(f.get('summary')))}</li>"
            for f in mine[:12]
        )
        more = f"<li>(+{len(mine) - 12} more)</li>" if len(mine) > 12 else ""
        rows.append(
            f'<tr class="gpu"><th scope="row">{escape(str(d.get("index")))}</th>'
            f"<td>{escape(bus)}</td><td>{escape(str(d.get('model') or 'model not read'))}</td>"
            f'<td class="s-{worst}">{escape(worst)}</td><td><ul>{items}{more}</ul></td></tr>'
        )
    return (
        '<h2>GPUs</h2><table id="gpus"><caption>GPUs and their findings</caption><thead><tr>'
        '<th scope="col">GPU</th><th scope="col">Bus id</th><th scope="col">Model</th>'
        '<th scope="col">Worst</th><th scope="col">Findings (not passing)</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _xids(findings: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for f in findings:
        if f["check"] != "gpu.xid":
            continue
        events = obj(f, "evidence").get("events")
        events = events if isinstance(events, list) else []
        for e in events:
            if isinstance(e, dict):
                age = e.get("newest_age_h")
                cells = (
                    f["subject"],
                    e.get("xid"),
                    e.get("count"),
                    f"{age:g} h ago" if isinstance(age, int | float) else "",
                    e.get("severity"),
                    e.get("meaning"),
                )
                rows.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in cells) + "</tr>")
    if not rows:
        return "<h2>Recent Xids</h2><p>None in the verdict's window.</p>"
    head = "".join(
        f'<th scope="col">{h}</th>'
        for h in ("Subject", "Xid", "Count", "Newest", "Severity", "Meaning")
    )
    return (
        '<h2>Recent Xids</h2><table id="xids"><caption>Xid events in the kernel log window'
        f"</caption><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _state(title: str, findings: Sequence[Mapping[str, Any]]) -> str:
    ident = title.lower().replace(" ", "-")
    if not findings:
        return f'<h2>{escape(title)}</h2><p id="{ident}">Nothing in this verdict.</p>'
    items = "".join(
        f"<li>{badge(f['status'])} {escape(f['check'])} {escape(f['subject'])}: "
        f"{escape(str(f.get('summary')))}</li>"
        for f in sorted(findings, key=lambda f: (_RANK[f["status"]], f["check"]))
    )
    return f'<h2>{escape(title)}</h2><ul id="{ident}">{items}</ul>'


def audit(manifests: Sequence[Mapping[str, Any]], check: Callable[[str, str], str]) -> str:
    """The audit trail of the store: every collection, its sources, whether each stored
    file is still the one collected (``check(file, sha256)``), and its actions."""
    if not manifests:
        return "<p>No collection recorded in this store yet.</p>"
    out = []
    for m in manifests:
        items = []
        for i in m.get("items") or ():
            if not isinstance(i, dict):
                continue
            text = escape(str(i.get("source")))
            if i.get("error"):
                text += f": {badge('fail', 'failed')} {escape(str(i['error']))}"
            else:
                state = "unknown"
                if isinstance(i.get("file"), str) and isinstance(i.get("sha256"), str):
                    state = check(i["file"], i["sha256"])
                colour = {"intact": "pass", "changed": "fail", "missing": "fail"}.get(
                    state, "unknown"
                )
                text += f": stored as {escape(str(i.get('node')))} {badge(colour, state)}"
            items.append(f"<li>{text}</li>")
        acts = "".join(
            f"<li>{escape(str(a.get('action')))}"
            f"{' (applied)' if a.get('applied') else ' (dry run)'}: "
            f"{escape(str(a.get('line')))}</li>"
            for a in m.get("actions") or ()
            if isinstance(a, dict)
        )
        actions = f"<h3>Actions</h3><ul>{acts}</ul>" if acts else ""
        out.append(
            f'<section class="collection"><h2>Collection {escape(str(m.get("collection")))}</h2>'
            f"<ul>{''.join(items)}</ul>{actions}</section>"
        )
    return (
        "<p>Each stored verdict is checked against the SHA-256 its collection recorded "
        "(intact, changed, missing). Drains and resumes are also audit events of the "
        "machine that ran them (<code>dolmen audit show</code>, "
        "<code>dolmen audit verify</code>).</p>" + "".join(out)
    )


FILTER_JS = _FILTER_JS
