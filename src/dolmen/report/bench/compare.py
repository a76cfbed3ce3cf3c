"""Two bench runs side by side: every figure of either, its value in each, and B/A.

The tune A/B becomes a training figure here: run ``dolmen bench`` before and after
``dolmen tune apply``, then ``--compare before.json after.json``. Rows pair by figure key
(figures.py); a figure only one run has shows ``-`` on the other side, never a ratio
against zero. Runs that differ in device or sizes are still compared, with that said
first, since a CPU run against a GPU run is a mistake worth a line, not a refusal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dolmen.report.bench.figures import Figure, figures
from dolmen.values.text import printable


@dataclass(frozen=True)
class Row:
    """One figure across two runs."""

    workload: str
    label: str
    unit: str
    a: float | None
    b: float | None

    @property
    def ratio(self) -> float | None:
        """B/A, or None when either is missing or A is zero."""
        if self.a is None or self.b is None or self.a == 0:
            return None
        return self.b / self.a


def compare_rows(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Row]:
    """The rows of A and B: A's figures in order, then those only B has."""
    fa = {f.key: f for f in figures(a)}
    fb = {f.key: f for f in figures(b)}
    rows: list[Row] = []
    for key, f in fa.items():
        other = fb.get(key)
        rows.append(Row(f.workload, f.label, f.unit, f.value, other.value if other else None))
    for key, f in fb.items():
        if key not in fa:
            rows.append(Row(f.workload, f.label, f.unit, None, f.value))
    return rows


def notes(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """What makes the two runs less comparable than they look."""
    out: list[str] = []
    if a.get("device") != b.get("device"):
        out.append(f"note: A ran on {a.get('device')}, B on {b.get('device')}")
    if a.get("host") != b.get("host"):
        out.append(
            f"note: different hosts ({printable(str(a.get('host')))} and "
            f"{printable(str(b.get('host')))})"
        )
    if a.get("smoke") or b.get("smoke"):
        out.append("note: smoke sizes in at least one run: its figures test the machinery only")
    for side, doc, other in (("A", a, b), ("B", b, a)):
        for name, why in sorted(doc.get("errors", {}).items()):
            out.append(f"note: {side} has no {printable(name)}: {printable(why)}")
        # Every workload a run asks for ends in its results or its errors: one in neither
        # was left out of the run (--only), which its "-" rows would not say.
        for name in sorted(_workloads(other) - _workloads(doc)):
            out.append(f"note: {side} has no {printable(name)}: not run (--only)")
    return out


def _workloads(doc: Mapping[str, Any]) -> set[str]:
    """The workloads a run ran: measured (``results``) or failed (``errors``)."""
    return {*doc.get("results", {}), *doc.get("errors", {})}


def render_compare(
    a: Mapping[str, Any], b: Mapping[str, Any], *, a_name: str = "A", b_name: str = "B"
) -> list[str]:
    """The comparison as terminal lines (ratios B/A; every figure is higher-is-better)."""
    lines = [
        f"A: {printable(a_name)}  ({_about(a)})",
        f"B: {printable(b_name)}  ({_about(b)})",
        *notes(a, b),
    ]
    rows = compare_rows(a, b)
    if not rows:
        lines.append("no figures in either run")
        return lines
    width = max(len(printable(r.label)) for r in rows)
    workload = ""
    for r in rows:
        if r.workload != workload:
            workload = r.workload
            lines.append("")
            lines.append(f"{workload:<{width}}  {'A':>10}  {'B':>10}  {'B/A':>6}  unit")
        ratio = "-" if r.ratio is None else f"{r.ratio:.3f}"
        lines.append(
            f"{printable(r.label):<{width}}  {_num(r.a):>10}  {_num(r.b):>10}  {ratio:>6}  {r.unit}"
        )
    return lines


def _about(doc: Mapping[str, Any]) -> str:
    host = printable(str(doc.get("host", "?")))
    return f"{host}, {doc.get('device')}, started {printable(str(doc.get('started')))}"


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"


__all__ = ["Figure", "Row", "compare_rows", "notes", "render_compare"]
