"""``validate --matrix``: the per-GPU findings as a check x GPU table, one mark a cell.

An 8-GPU node gives about 250 per-GPU findings; the matrix gives one row per check and one
column per GPU, so the odd GPU out shows at a glance (dcgmi diag's results table does the
same). Checks that pass on every GPU fold into one line unless verbose. Columns are the
inventory's indexes; a GPU the driver did not list is named by its bus id. The findings
themselves stay one ``--gpu N`` away.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text

from dolmen.checks.model import Finding, Status
from dolmen.report.terminal.gpus import gpu_buses, indexes, subject_bus
from dolmen.report.terminal.layout import GAP, STYLE
from dolmen.values.busid import BusId

MARK = {
    Status.PASS: ".",
    Status.WARN: "W",
    Status.FAIL: "F",
    Status.UNKNOWN: "?",
    Status.SKIP: "-",
    Status.ERROR: "E",
}
WORST = (Status.FAIL, Status.ERROR, Status.UNKNOWN, Status.WARN, Status.SKIP, Status.PASS)
LEGEND = ". pass  W warn  F fail  ? unknown  - skip  E error  (blank: no finding)"


def split(
    findings: Sequence[Finding], inventory: Mapping[str, Any]
) -> tuple[list[Finding], list[Finding]]:
    """(findings about one GPU of the verdict, the others: host, NICs, other PCI devices)."""
    buses = set(gpu_buses(findings, inventory))
    gpu: list[Finding] = []
    rest: list[Finding] = []
    for f in findings:
        (gpu if subject_bus(f.subject) in buses else rest).append(f)
    return gpu, rest


def cells(
    findings: Sequence[Finding], inventory: Mapping[str, Any]
) -> tuple[list[str], dict[str, list[Status | None]]]:
    """Column labels and, per check, the worst status of each column's GPU (None: none).
    A ``pci:`` subject counts for a GPU only when the inventory lists that bus id."""
    known = indexes(inventory)
    named = {subject_bus(f.subject) for f in findings}
    buses = [b for b in gpu_buses(findings, inventory) if b in named]  # --gpu: one column
    column = {b: i for i, b in enumerate(buses)}
    labels = [str(known[b]) if b in known else _short(b) for b in buses]
    rows: dict[str, list[Status | None]] = {}
    for f in findings:
        bus = subject_bus(f.subject)
        if bus is None or bus not in column:
            continue
        row = rows.setdefault(f.check, [None] * len(buses))
        row[column[bus]] = _worse(row[column[bus]], f.status)
    return labels, dict(sorted(rows.items()))


def matrix_lines(
    findings: Sequence[Finding], inventory: Mapping[str, Any], *, verbose: bool
) -> list[Text]:
    """The table's lines (the same in a terminal and in a file: its columns are its
    meaning), the legend, and the count of checks that passed on every GPU."""
    labels, rows = cells(findings, inventory)
    if not rows:
        return [Text("no finding names a GPU", style="dim")]
    shown = {c: r for c, r in rows.items() if verbose or any(s is not Status.PASS for s in r)}
    check_w = max(len("GPU"), *(len(c) for c in shown)) if shown else len("GPU")
    col_w = [max(len(label), 1) for label in labels]
    head = "GPU".ljust(check_w) + "".join(GAP + lb.rjust(w) for lb, w in zip(labels, col_w))
    out = [Text(head.rstrip(), style="bold")]
    for check_id, row in shown.items():
        line = Text(check_id.ljust(check_w))
        for status, w in zip(row, col_w):
            mark = MARK[status] if status is not None else " "
            line.append(GAP + mark.rjust(w), style=STYLE[status] if status else "")
        line.rstrip()
        out.append(line)
    hidden = len(rows) - len(shown)
    if hidden and not shown:
        what = "1 check passes" if hidden == 1 else f"all {hidden} checks pass"
        out.append(Text(f"{what} on every GPU judged (-v lists them)"))
    elif hidden:
        what = "check passes" if hidden == 1 else "checks pass"
        out.append(Text(f"{hidden} more {what} on every GPU judged (-v lists them)"))
    out.append(Text(LEGEND, style="dim"))
    return out


def _short(bus: BusId) -> str:
    """A GPU the driver did not list, as lspci names it (``86:00.0``, domain 0 left out)."""
    return bus.sysfs[5:] if bus.domain == 0 else bus.sysfs


def _worse(a: Status | None, b: Status) -> Status:
    return b if a is None or WORST.index(b) < WORST.index(a) else a
