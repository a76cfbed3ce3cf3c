"""The fleet report as text: a nodes x failing-checks table, outliers, changes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dolmen.values.text import printable

_CELL = {"fail": "FAIL", "error": "err", "unknown": "?", "warn": "warn", "skip": "skip"}
_CELL |= {"pass": "ok", "absent": "-"}


def render(report: Mapping[str, Any]) -> list[str]:
    """The lines of the text report (host text made printable: verdicts are untrusted)."""
    rows, columns = report["nodes"], report["columns"]
    s = report["summary"]
    lines = [
        f"fleet: {s['nodes']} nodes: {s['healthy']} healthy, {s['degraded']} degraded, "
        f"{s['unhealthy']} unhealthy, {s['undecided']} undecided"
    ]
    if not rows:
        return [*lines, "(the store holds no verdict yet: dolmen fleet collect SOURCES...)"]
    header = ["node", "status", *(f"[{i + 1}]" for i in range(len(columns)))]
    table = [header]
    for r in rows:
        table.append([r["node"], r["status"], *(_CELL[r["checks"][c]] for c in columns)])
    widths = [max(len(printable(row[i])) for row in table) for i in range(len(header))]
    lines.append("")
    for row in table:
        lines.append("  ".join(printable(v).ljust(w) for v, w in zip(row, widths, strict=True)))
    if columns:
        lines.append("")
        lines += [f"[{i + 1}] {c}" for i, c in enumerate(columns)]
    undecided = [r for r in rows if r["undecided"]]
    for r in undecided:
        more = len(r["undecided"]) - 6
        tail = f" (+{more} more)" if more > 0 else ""
        lines.append(f"{r['node']}: could not read: {', '.join(r['undecided'][:6])}{tail}")
    lines.append("")
    if report["outliers"]:
        lines.append("outliers against the fleet:")
        lines += [f"  {o['node']}: {printable(o['why'])}" for o in report["outliers"]]
    else:
        lines.append("outliers against the fleet: none")
    for figure, nodes in sorted(report["not_known"].items()):
        lines.append(f"  {figure} not known for: {', '.join(nodes)}")
    lines.append("")
    since = report.get("since")
    if since is None:
        lines.append("changes: first report of this store")
    elif not report["changes"]:
        lines.append(f"changes since {since}: none")
    else:
        lines.append(f"changes since {since}:")
        for c in report["changes"]:
            lines.append(f"  {c['node']}: {c['what']}: {_v(c['before'])} -> {_v(c['after'])}")
    lines += [f"store: {printable(p)}" for p in report["store_problems"]]
    return lines


def _v(value: Any) -> str:
    return "-" if value is None else printable(str(value))
