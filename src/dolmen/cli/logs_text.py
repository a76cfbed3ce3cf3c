"""The terminal report of ``dolmen logs scan``: a summary per code, every line with -v.

An Xid 13 storm is 629 lines of one message; what a person needs first is the code,
how often, on which GPUs, and the first and last time it happened (with the line to
find it). That summary keeps a few numbers per code, whatever the log's size; ``-v``
prints every event line too, grouped by device and code (held until the end: it is
what the reader asked for).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from dolmen.values.text import printable

_STYLE = {"critical": "bold red", "warn": "yellow", "info": "dim"}
RANK = {"info": 0, "warn": 1, "critical": 2}
_NAMED = 8  # devices named on a code's line; the rest are counted
_GROUPS = 256  # devices remembered per code (a hostile log could name millions)


@dataclass
class Code:
    """One code (``Xid 79``, ``ib_flap``) of one file: counts, devices, first and last."""

    first: dict[str, Any]
    last: dict[str, Any]
    worst: dict[str, Any]
    count: int = 0
    groups: dict[str, None] = field(default_factory=dict)
    more_groups: int = 0

    def add(self, doc: dict[str, Any]) -> None:
        self.count += 1
        self.last = doc
        if RANK[doc["severity"]] > RANK[self.worst["severity"]]:
            self.worst = doc
        if doc["group"] not in self.groups:
            if len(self.groups) < _GROUPS:
                self.groups[doc["group"]] = None
            else:
                self.more_groups += 1


class TextReport:
    """Collects the kept events of each file (``add``), then prints (``render``)."""

    def __init__(self, files: int, *, verbose: bool) -> None:
        self.verbose = verbose
        self.codes: list[dict[str, Code]] = [{} for _ in range(files)]
        self.lines: list[dict[str, dict[str, list[dict[str, Any]]]]] = [{} for _ in range(files)]

    def add(self, index: int, doc: dict[str, Any]) -> None:
        codes = self.codes[index]
        code = codes.get(doc["label"])
        if code is None:
            code = codes[doc["label"]] = Code(first=doc, last=doc, worst=doc)
        code.add(doc)
        if self.verbose:
            by_label = self.lines[index].setdefault(doc["group"], {})
            by_label.setdefault(doc["label"], []).append(doc)

    def render(self, heads: list[tuple[str, str | None]], summary: dict[str, Any]) -> None:
        """``heads``: per file, its header line and the window line (None without --since)."""
        out = Printer()
        for index, (head, window) in enumerate(heads):
            out.line(head, "bold")
            if window:
                out.line(f"  {window}")
            codes = self.codes[index]
            if not codes:
                out.line("  no events")
            ranked = sorted(codes.items(), key=lambda kv: -RANK[kv[1].worst["severity"]])
            for label, code in ranked:
                _code_lines(out, label, code)
            if self.verbose and codes:
                out.line("  every event, by device:", "bold")
                for group, labels in self.lines[index].items():
                    out.line(f"  {group}", "bold")
                    for label, docs in labels.items():
                        out.line(f"    {label}  x{len(docs)}")
                        for d in docs:
                            out.line(f"      {when(d)}  line {d['line']}: {d['message']}")
        codes_text = ", ".join(f"{k} x{n}" for k, n in summary["by_code"].items()) or "none"
        groups = ", ".join(f"{k} x{n}" for k, n in summary["by_group"].items()) or "none"
        out.line(
            f"summary: {summary['events']} events ({summary['critical']} critical, "
            f"{summary['warn']} warn, {summary['info']} info); by code: {codes_text}; "
            f"by device: {groups}",
            "bold red" if summary["critical"] else "bold",
        )


def _code_lines(out: Printer, label: str, code: Code) -> None:
    w = code.worst
    out.line(
        f"  {label}  {w['severity']}  action: {w['action']}  x{code.count} {where(code)}  "
        f"{code.first['meaning']}",
        _STYLE[w["severity"]],
    )
    if code.count == 1:
        out.line(
            f"    only   {when(code.first)}  line {code.first['line']}: {code.first['message']}"
        )
        return
    for tag, d in (("first", code.first), ("last ", code.last)):
        out.line(f"    {tag}  {when(d)}  line {d['line']}: {d['message']}")


def where(code: Code) -> str:
    """``on GPU 0000:38:00.0``, ``on 3 GPUs: a, b, c``, ``on 2 devices: link ib6, ...``."""
    groups = list(code.groups)
    total = len(groups) + code.more_groups
    gpus = all(g.startswith("GPU ") for g in groups)
    if total == 1:
        return f"on {groups[0]}"
    names = [g.removeprefix("GPU ") if gpus else g for g in groups[:_NAMED]]
    rest = total - len(names)
    listed = ", ".join(names) + (f" and {rest} more" if rest else "")
    return f"on {total} {'GPUs' if gpus else 'devices'}: {listed}"


def when(doc: dict[str, Any]) -> str:
    """The event's time as the log gave it: ISO 8601, seconds since boot, or ``-``."""
    if doc["time"] is not None:
        return str(doc["time"])
    if doc["boot_seconds"] is not None:
        return f"[{doc['boot_seconds']:.6f}]"
    return "-"


class Printer:
    """Writes lines to stdout, through rich only when stdout is a terminal."""

    def __init__(self) -> None:
        self._console: Any = None
        if sys.stdout.isatty():
            from rich.console import Console

            self._console = Console(highlight=False)

    def line(self, text: str, style: str | None = None) -> None:
        # Log lines, device and file names are someone else's bytes: shown, never obeyed.
        text = printable(text)
        if self._console is None:
            sys.stdout.write(text + "\n")
        else:
            from rich.text import Text

            self._console.print(Text(text, style=style or ""), soft_wrap=True)
