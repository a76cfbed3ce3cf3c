"""The terminal report: what was looked at, then the findings by category, problems first.

Layout (``layout.py``): for a terminal, wrapped to its width with identifiers never cut;
piped to a file, plain lines (no wrapping, no padding). Cascades fold under their root
cause (``fold.py``); ``--matrix`` shows the per-GPU findings as a table (``matrix.py``);
``--status`` and ``--gpu`` choose what is listed, never what the verdict says.

Every string that came from the host (its name, subjects, summaries quoting a log line or
a model name) goes through ``values.text.printable`` and into a rich ``Text``, never into
markup: a bundle's bytes are shown, not obeyed (no terminal escapes, no ``[link=...]``
markup, no ``[/]`` that would crash the renderer).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from rich.console import Console
from rich.text import Text

from dolmen.checks.model import Finding, Status
from dolmen.checks.verdict import Health, Verdict
from dolmen.report.terminal.fold import Group, Item, describe, fold
from dolmen.report.terminal.gpus import labels, subject_bus
from dolmen.report.terminal.header import LABEL_W, header
from dolmen.report.terminal.layout import STYLE, Row, geometry, lay_out, wrap
from dolmen.report.terminal.matrix import matrix_lines, split
from dolmen.values.busid import BusId
from dolmen.values.text import printable

__all__ = ["STYLE", "Options", "render_terminal", "report_lines"]

HEALTH_STYLE = {
    Health.HEALTHY: "bold green",
    Health.DEGRADED: "bold yellow",
    Health.UNHEALTHY: "bold red",
    Health.UNDECIDED: "bold magenta",
}
ORDER = [Status.FAIL, Status.ERROR, Status.UNKNOWN, Status.WARN, Status.PASS, Status.SKIP]
REMEDIED = (Status.FAIL, Status.WARN, Status.UNKNOWN, Status.ERROR)


@dataclass(frozen=True)
class Options:
    """What the report shows: every finding (``verbose``), the GPU matrix, only some statuses
    (None: problems and warnings), only one GPU (by bus id)."""

    verbose: bool = False
    matrix: bool = False
    statuses: frozenset[Status] | None = None
    gpu: BusId | None = None
    undone: frozenset[int] = frozenset()  # ids of the skips that keep a verdict undecided


def render_terminal(
    v: Verdict, console: Console, *, verbose: bool = False, options: Options | None = None
) -> None:
    """Print the verdict: wrapped to a terminal's width, plain lines when piped."""
    opts = options or Options(verbose=verbose)
    width = console.width if console.is_terminal else None
    for line in report_lines(v, width, opts):
        console.print(line, soft_wrap=True, highlight=False)


def report_lines(v: Verdict, width: int | None, opts: Options | None = None) -> list[Text]:
    """The report's lines for a terminal ``width`` columns wide, or plain when None."""
    opts = opts or Options()
    out = _header(v, width)
    findings = sorted(v.findings, key=_order(v.findings))
    if opts.gpu is not None:
        findings = [f for f in findings if subject_bus(f.subject) == opts.gpu]
    listed = sum(opts.statuses is None or f.status in opts.statuses for f in findings)
    tally = Counter((f.category, f.status) for f in findings)  # folding moves none of them
    if opts.matrix:  # the matrix shows every per-GPU finding; the list keeps their problems
        per_gpu, _ = split(findings, v.inventory)
        out += matrix_lines(per_gpu, v.inventory, verbose=opts.verbose)
        in_matrix = {id(f) for f in per_gpu if f.status in (Status.PASS, Status.SKIP)}
        findings = [f for f in findings if id(f) not in in_matrix]
    names = labels(v.findings, v.inventory)
    # At level full a workload that did not run is why the verdict is undecided: listed
    # with its reason, never folded into "passed or not applicable".
    undone = {id(f) for f in v.problems() if f.status is Status.SKIP}
    opts = replace(opts, undone=frozenset(undone))
    blocks = [_category(c, items, names, opts, tally) for c, items in _by_category(fold(findings))]
    geo = geometry([r for b in blocks for r in b.rows], width)
    calm: list[str] = []
    for b in blocks:
        if not b.rows and not b.notes:
            calm.append(b.counts)
            continue
        out.append(b.head)
        out += lay_out(b.rows, width, geo)
        out += [line for note in b.notes for line in _dim(note, width)]
    if calm and opts.statuses is None:
        out += _dim("passed or not applicable: " + ", ".join(calm), width, indent="")
    out += _footer(v, opts, listed, width)
    return out


@dataclass(frozen=True)
class _Block:
    """One category of the report: its head line, rows, notes, and its counts in words."""

    head: Text
    rows: list[Row]
    notes: list[str]
    counts: str


def _order(findings: Sequence[Finding]) -> Callable[[Finding], tuple[int, str, int, str, str]]:
    """Categories by their worst status, then status, check, subject."""
    worst: dict[str, int] = {}
    for f in findings:
        worst[f.category] = min(worst.get(f.category, 99), ORDER.index(f.status))

    def key(f: Finding) -> tuple[int, str, int, str, str]:
        return (worst[f.category], f.category, ORDER.index(f.status), f.check, f.subject)

    return key


def _by_category(items: list[Item]) -> list[tuple[str, list[Item]]]:
    """Items by category, in order; a group with a root stays under its root's category."""
    out: dict[str, list[Item]] = defaultdict(list)
    category = ""
    for item in items:
        if isinstance(item, Finding):
            category = item.category
        elif item.root is None or not category:
            category = item.members[0].category
        out[category].append(item)
    return list(out.items())


def _shown(item: Item, opts: Options) -> bool:
    status = item.status
    if opts.statuses is not None:
        return status in opts.statuses
    if opts.verbose or any(id(f) in opts.undone for f in _findings(item)):
        return True
    if status in (Status.PASS, Status.SKIP):
        return False
    return not (status is Status.UNKNOWN and not item.gating)


def _category(
    category: str,
    items: list[Item],
    names: dict[str, str],
    opts: Options,
    tally: Counter[tuple[str, Status]],
) -> _Block:
    here = [f for item in items for f in _findings(item)]  # a group's members from elsewhere too
    passes, skips = tally[(category, Status.PASS)], tally[(category, Status.SKIP)]
    counts = f"{passes} pass, {skips} skip"
    head = Text(printable(category), style="bold")
    head.append(f"  {counts}", style="dim")
    rows = _remedy_once([r for i in items if _shown(i, opts) for r in _rows(i, names, opts)])
    quiet = [f for f in here if f.status is Status.UNKNOWN and not f.gating and not _shown(f, opts)]
    notes: list[str] = []
    if quiet and opts.statuses is None:
        ids = ", ".join(sorted({f.check.removeprefix(f"{category}.") for f in quiet}))
        notes.append(
            f"{len(quiet)} advisory signal(s) could not be read here ({ids}): -v shows why"
        )
    return _Block(head, rows, notes, f"{printable(category)} ({counts})")


def _remedy_once(rows: list[Row]) -> list[Row]:
    """Rows of one check in a row with the same remedy print it once, after the last."""
    out = list(rows)
    for i in range(len(out) - 1):
        here, nxt = out[i], out[i + 1]
        if here.remedy and here.check == nxt.check and here.remedy == nxt.remedy:
            out[i] = replace(here, remedy=None)
    return out


def _findings(item: Item) -> tuple[Finding, ...]:
    return item.members if isinstance(item, Group) else (item,)


def _rows(item: Item, names: dict[str, str], opts: Options) -> list[Row]:
    if isinstance(item, Finding):
        remedy = item.remedy if item.status in REMEDIED else None
        return [Row(item.status, item.check, item.subject, item.summary, remedy)]
    rows = [Row(item.status, "", "", describe(item, names), span=True)]
    if opts.verbose:
        rows += [Row(f.status, f.check, f.subject, f.summary, depth=1) for f in item.members]
    return rows


def _header(v: Verdict, width: int | None) -> list[Text]:
    out: list[Text] = []
    for label, text in header(v):
        first = label.ljust(LABEL_W)
        if width is None:
            out.append(Text(printable(first + text).rstrip()))
            continue
        lines = wrap(printable(text), width, indent=" " * LABEL_W, first=first)
        out += [Text(line) for line in lines]
    for line in out:
        line.stylize("bold", 0, LABEL_W)
    return out


def _footer(v: Verdict, opts: Options, listed: int, width: int | None) -> list[Text]:
    """The verdict line (what a scheduler acts on), then what was listed and the GPU note."""
    c = v.counts
    unread = sum(f.status in (Status.UNKNOWN, Status.ERROR) and f.gating for f in v.findings)
    advisory = c["unknown"] + c["error"] - unread
    host, health = printable(v.host), v.health.value.upper()
    text = (
        f"{host}: {health}  ({c['fail']} fail, {unread} unknown, {c['warn']} warn, "
        f"{c['pass']} pass, {c['skip']} skip"
        + (f", {advisory} advisory unread" if advisory else "")
        + f"; level {v.level}, {v.duration_s:.2f} s)"
    )
    lines = [text] if width is None else wrap(text, width, indent="  ")
    out = [Text(line) for line in lines]
    out[0].stylize("bold", 0, len(host) + 1)
    out[0].stylize(HEALTH_STYLE[v.health], len(host) + 2, len(host) + 2 + len(health))
    chosen = _chosen(opts)
    notes = [f"listed: {chosen} ({listed} of {len(v.findings)} findings)"] if chosen else []
    if v.gpu_note:  # what the bundle held is the header's "read" and "not read" lines
        notes.append(printable(v.gpu_note))
    for note in notes:
        out += _dim(note, width)
    return out


def _chosen(opts: Options) -> str:
    parts = []
    if opts.statuses is not None:
        parts.append("status " + ",".join(s.value for s in ORDER if s in opts.statuses))
    if opts.gpu is not None:
        parts.append(f"GPU {opts.gpu.nvsmi}")
    return "; ".join(parts)


def _dim(text: str, width: int | None, indent: str = "  ") -> list[Text]:
    lines = [indent + text] if width is None else wrap(text, width, indent="  ", first=indent)
    return [Text(line, style="dim") for line in lines]


def parse_statuses(text: str) -> frozenset[Status]:
    """``fail,warn`` to statuses; ValueError naming the valid choices for any other word."""
    valid = [s.value for s in ORDER]
    words = [w.strip().lower() for w in text.split(",") if w.strip()]
    bad = [w for w in words if w not in valid]
    if bad or not words:
        raise ValueError(
            f"unknown status {', '.join(map(repr, bad)) or repr(text)}; "
            f"valid: {', '.join(valid)} (comma-separated)"
        )
    return frozenset(Status(w) for w in words)
