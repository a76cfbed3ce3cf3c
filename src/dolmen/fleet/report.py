"""``dolmen fleet report``: the store's latest verdicts side by side (pure, given them).

The document (``dolmen.fleet.report/1``, report/schemas/fleet.report.schema.json):
each node's status and failing checks, the check columns of the nodes x failing-checks
table, the outliers against the fleet's majority (``figures``) and the changes since
the last report (its state is saved in the store: ``reports/last.json``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dolmen.fleet.figures import node_figures, outliers
from dolmen.fleet.store import Stored

SCHEMA = "dolmen.fleet.report/1"
_RANK = {"fail": 0, "error": 1, "unknown": 2, "warn": 3, "skip": 4, "pass": 5}


def worst_by_check(doc: Mapping[str, Any]) -> dict[str, str]:
    """Check id -> the worst status of its findings (gating findings only for fail)."""
    out: dict[str, str] = {}
    for f in doc.get("findings") or ():
        status = f["status"]
        if status == "fail" and f.get("gating") is False:
            status = "warn"  # advisory checks only warn (checks.verdict.judge)
        if f["check"] not in out or _RANK[status] < _RANK[out[f["check"]]]:
            out[f["check"]] = status
    return out


def node_row(s: Stored) -> dict[str, Any]:
    """One node's row of the report."""
    doc = s.doc
    worst = worst_by_check(doc)
    problems = [
        {
            "check": f["check"],
            "subject": f["subject"],
            "status": f["status"],
            "summary": str(f.get("summary") or ""),
        }
        for f in doc["findings"]
        if f["status"] in ("fail", "error", "unknown") and f.get("gating") is not False
    ]
    return {
        "node": s.node,
        "status": doc["status"],
        "level": str(doc.get("level") or ""),
        "started": str(doc.get("started") or ""),
        "collection": s.collection,
        "file": str(s.path),
        "counts": {k: v for k, v in (doc.get("counts") or {}).items() if isinstance(v, int)},
        "failing": sorted(c for c, st in worst.items() if st == "fail"),
        "undecided": sorted(c for c, st in worst.items() if st in ("error", "unknown")),
        "checks": worst,
        "problems": problems,
        "figures": node_figures(doc),
    }


def build(
    latest: Mapping[str, Stored],
    previous: Mapping[str, Any] | None,
    *,
    store_problems: Sequence[str] = (),
    generated: str = "",
    fleet_dir: str = "",
) -> dict[str, Any]:
    """The report document."""
    rows = [node_row(latest[n]) for n in sorted(latest)]
    found, unknown = outliers({r["node"]: r["figures"] for r in rows})
    columns = sorted({c for r in rows for c in r["failing"]})
    for r in rows:
        r["checks"] = {c: r["checks"].get(c, "absent") for c in columns}
    return {
        "schema": SCHEMA,
        "fleet_dir": fleet_dir,
        "generated": generated,
        "nodes": rows,
        "columns": columns,
        "summary": _summary(rows),
        "outliers": [vars(o) for o in found],
        "not_known": unknown,
        "changes": changes(previous, rows),
        "since": (previous or {}).get("generated"),
        "store_problems": list(store_problems),
    }


def state(report: Mapping[str, Any]) -> dict[str, Any]:
    """What the next report compares with."""
    return {
        "schema": "dolmen.fleet.report-state/1",
        "generated": report["generated"],
        "nodes": {
            r["node"]: {
                "status": r["status"],
                "failing": r["failing"],
                "figures": r["figures"],
                "collection": r["collection"],
            }
            for r in report["nodes"]
        },
    }


def changes(previous: Mapping[str, Any] | None, rows: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Pure: what differs from the previous report's state, one entry per change."""
    if not previous or not isinstance(previous.get("nodes"), dict):
        return []
    before: Mapping[str, Any] = previous["nodes"]
    out: list[dict[str, Any]] = []
    now = {r["node"]: r for r in rows}
    for node in sorted(set(before) | set(now)):
        old, new = before.get(node), now.get(node)
        if not isinstance(old, dict):
            out.append(_change(node, "new node", None, new and new["status"]))
            continue
        if new is None:
            out.append(_change(node, "no longer in the store", old.get("status"), None))
            continue
        if old.get("status") != new["status"]:
            out.append(_change(node, "status", old.get("status"), new["status"]))
        was = set(old.get("failing") or ())
        for c in sorted(set(new["failing"]) - was):
            out.append(_change(node, "now failing", None, c))
        for c in sorted(was - set(new["failing"])):
            out.append(_change(node, "no longer failing", c, None))
        figs: Mapping[str, Any] = old["figures"] if isinstance(old.get("figures"), dict) else {}
        for k in sorted(set(figs) | set(new["figures"])):
            a, b = figs.get(k), new["figures"].get(k)
            if a != b:
                out.append(_change(node, k, a, b))
    return out


def _change(node: str, what: str, before: Any, after: Any) -> dict[str, Any]:
    return {"node": node, "what": what, "before": before, "after": after}


def _summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    out = {"nodes": len(rows), "healthy": 0, "degraded": 0, "unhealthy": 0, "undecided": 0}
    for r in rows:
        out[r["status"]] += 1
    return out
