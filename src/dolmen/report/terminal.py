"""The terminal report: findings grouped by category, problems first, with remedies.

Every string that came from the host (its name, subjects, summaries quoting a log
line or a model name) goes through ``values.text.printable`` and into a rich ``Text``,
never into markup: a bundle's bytes are shown, not obeyed (no terminal escapes, no
``[link=...]`` markup, no ``[/]`` that would crash the renderer).
"""

from __future__ import annotations

from collections import defaultdict

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dolmen.checks.model import Finding, Status
from dolmen.checks.verdict import Health, Verdict
from dolmen.values.text import printable

STYLE = {
    Status.PASS: "green",
    Status.WARN: "yellow",
    Status.FAIL: "bold red",
    Status.SKIP: "dim",
    Status.UNKNOWN: "magenta",
    Status.ERROR: "bold magenta",
}
HEALTH_STYLE = {
    Health.HEALTHY: "bold green",
    Health.DEGRADED: "bold yellow",
    Health.UNHEALTHY: "bold red",
    Health.UNDECIDED: "bold magenta",
}
ORDER = [Status.FAIL, Status.ERROR, Status.UNKNOWN, Status.WARN, Status.PASS, Status.SKIP]


def render_terminal(v: Verdict, console: Console, *, verbose: bool = False) -> None:
    """Print the verdict. Passes and skips collapse into counts unless ``verbose``."""
    by_cat: dict[str, list[Finding]] = defaultdict(list)
    for f in v.findings:
        by_cat[f.category].append(f)
    for category in sorted(by_cat, key=lambda c: _worst(by_cat[c])):
        rows = sorted(by_cat[category], key=lambda f: (ORDER.index(f.status), f.check, f.subject))
        shown = [f for f in rows if verbose or _worth_showing(f)]
        hidden = len(rows) - len(shown)
        quiet = [f for f in rows if f.status is Status.UNKNOWN and not f.gating]
        table = Table(title=None, show_header=False, box=None, pad_edge=False, expand=False)
        table.add_column("status", no_wrap=True)
        table.add_column("check", no_wrap=True)
        table.add_column("subject", no_wrap=True)
        table.add_column("summary")
        for f in shown:
            table.add_row(
                Text(f.status.value.upper(), style=STYLE[f.status]),
                _plain(f.check),
                _plain(f.subject),
                _plain(f.summary),
            )
            if f.remedy and f.status in (Status.FAIL, Status.WARN, Status.UNKNOWN, Status.ERROR):
                table.add_row("", "", "", _plain(f"fix: {f.remedy}", style="cyan"))
        passes = sum(f.status is Status.PASS for f in rows)
        skips = sum(f.status is Status.SKIP for f in rows)
        head = _plain(category, style="bold")
        head.append(f"  {passes} pass, {skips} skip", style="dim")
        console.print(head)
        if shown:
            console.print(table)
        if quiet and not verbose:
            console.print(
                Text(
                    f"  {len(quiet)} advisory signal(s) could not be read here "
                    f"({', '.join(sorted({f.check.split('.', 1)[1] for f in quiet}))}): "
                    "-v shows why",
                    style="dim",
                )
            )
        elif not shown and hidden:
            console.print(Text("  all passed or not applicable", style="dim"))
    c = v.counts
    unread = sum(f.status in (Status.UNKNOWN, Status.ERROR) and f.gating for f in v.findings)
    advisory = c["unknown"] + c["error"] - unread
    line = _plain(f"{v.host}: ", style="bold")
    line.append(v.health.value.upper(), style=HEALTH_STYLE[v.health])
    line.append(
        f"  ({c['fail']} fail, {unread} unknown, {c['warn']} warn, {c['pass']} pass, "
        f"{c['skip']} skip"
        + (f", {advisory} advisory unread" if advisory else "")
        + f"; level {v.level}, {v.duration_s:.2f} s)"
    )
    console.print(line)
    for note in (v.gpu_note, v.partial):
        if note:
            console.print(_plain(f"  {note}", style="dim"))


def _plain(text: str, *, style: str = "") -> Text:
    """Host text as rich shows it: control characters escaped, no markup."""
    return Text(printable(text), style=style)


def _worth_showing(f: Finding) -> bool:
    """Problems, and warnings; not passes, skips, or advisory signals nobody could read."""
    if f.status in (Status.PASS, Status.SKIP):
        return False
    return not (f.status is Status.UNKNOWN and not f.gating)


def _worst(findings: list[Finding]) -> int:
    return min(ORDER.index(f.status) for f in findings)
