"""Rows of findings laid out as lines: for a terminal of a given width, or plain.

Three layouts, chosen from the width and nothing else:

- plain (``width`` None: output piped to a file or a program): one line per finding, the
  fields separated by two spaces, never wrapped, never padded; the remedy on the line
  after. ``grep``, ``awk -F'  '`` and a ticket paste get whole lines.
- wide: status, check and subject in aligned columns, the summary and the remedy wrapped
  in the column left over.
- narrow, below ``NARROW_BELOW`` columns or when the identifiers leave the summary fewer
  than ``MIN_SUMMARY``:
  status, check and subject on one line, the summary under it and the remedy on its own
  line, each wrapped to the full width.

Identifiers (check ids, subjects, bus ids, paths) are never cut or wrapped: a line that
holds one may run past the width (the terminal wraps it) rather than lose characters.
Lines are built here, already wrapped; the caller prints them without rich's wrapping.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

from dolmen.checks.model import Status
from dolmen.values.text import printable

STYLE = {
    Status.PASS: "green",
    Status.WARN: "yellow",
    Status.FAIL: "bold red",
    Status.SKIP: "dim",
    Status.UNKNOWN: "magenta",
    Status.ERROR: "bold magenta",
}
STATUS_W = max(len(s.value) for s in Status)  # UNKNOWN
GAP = "  "
MIN_SUMMARY = 40  # below this the summary column is too thin to read: narrow layout
NARROW_BELOW = 100  # an 80-column terminal gets the summary and remedy on full-width lines
INDENT = "  "


@dataclass(frozen=True)
class Row:
    """One line of the report before layout. ``span``: the text takes the check and subject
    columns too (a folded group's line); ``depth`` 1: a member under its group (-v)."""

    status: Status
    check: str
    subject: str
    summary: str
    remedy: str | None = None
    span: bool = False
    depth: int = 0


@dataclass(frozen=True)
class Geometry:
    """Where the columns are: one geometry for the whole report, so every category lines up.
    ``summary_at`` None: the narrow layout."""

    check_w: int
    subject_w: int
    summary_at: int | None


def geometry(rows: Sequence[Row], width: int | None) -> Geometry:
    """The columns of ``rows`` at ``width``: wide when the widest identifiers leave the
    summary ``MIN_SUMMARY`` columns and the terminal is ``NARROW_BELOW`` or wider."""
    cols = [_printable(r) for r in rows if not r.span]
    check_w = max((len(r.check) + len(INDENT) * r.depth for r in cols), default=0)
    subject_w = max((len(r.subject) for r in cols), default=0)
    at = STATUS_W + len(GAP) + check_w + len(GAP) + subject_w + len(GAP)
    wide = width is not None and width >= NARROW_BELOW and width - at >= MIN_SUMMARY
    return Geometry(check_w, subject_w, at if wide else None)


def lay_out(rows: Sequence[Row], width: int | None, geo: Geometry | None = None) -> list[Text]:
    """The lines of ``rows`` for a terminal ``width`` columns wide, or plain when None."""
    rows = [_printable(r) for r in rows]
    if width is None:
        return [line for r in rows for line in _plain(r)]
    geo = geo or geometry(rows, width)
    if geo.summary_at is not None:
        return [line for r in rows for line in _wide(r, width, geo.check_w, geo.subject_w)]
    return [line for r in rows for line in _narrow(r, width)]


def wrap(text: str, width: int, indent: str = "", first: str = "") -> list[str]:
    """``text`` wrapped to ``width`` columns, breaking only at spaces (an identifier or a
    path is never split), the first line after ``first``, the others after ``indent``."""
    lines = textwrap.wrap(
        text,
        width=max(width, len(indent) + 20),
        initial_indent=first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return lines or [first.rstrip()]


def _printable(r: Row) -> Row:
    """Host text as a terminal shows it: control characters escaped (values.text)."""
    return Row(
        r.status,
        printable(r.check),
        printable(r.subject),
        printable(r.summary),
        printable(r.remedy) if r.remedy else None,
        r.span,
        r.depth,
    )


def _line(text: str, r: Row, at: int) -> Text:
    """A line of plain text with the status word at column ``at`` in its colour."""
    t = Text(text.rstrip())
    word = len(r.status.value)
    t.stylize(STYLE[r.status], at, at + word)
    return t


def _plain(r: Row) -> list[Text]:
    lead = INDENT * r.depth
    fields = [r.summary] if r.span else [r.check, r.subject, r.summary]
    out = [_line(lead + GAP.join([r.status.value.upper(), *fields]), r, len(lead))]
    if r.remedy:
        out.append(Text(f"{lead}{INDENT}fix: {r.remedy}", style="cyan"))
    return out


def _wide(r: Row, width: int, check_w: int, subject_w: int) -> list[Text]:
    lead = INDENT * r.depth
    word = r.status.value.upper().ljust(STATUS_W) + GAP
    if r.span:
        first = word + lead
    else:
        first = word + (lead + r.check).ljust(check_w) + GAP + r.subject.ljust(subject_w) + GAP
    column = " " * len(first)
    lines = wrap(r.summary, width, indent=column, first=first)
    out = [_line(lines[0], r, 0), *(Text(line) for line in lines[1:])]
    if r.remedy:
        fix = wrap(f"fix: {r.remedy}", width, indent=column, first=column)
        out.extend(Text(line, style="cyan") for line in fix)
    return out


def _narrow(r: Row, width: int) -> list[Text]:
    lead = INDENT * r.depth
    word = r.status.value.upper() + GAP
    under = lead + INDENT
    if r.span:
        lines = wrap(r.summary, width, indent=under, first=lead + word)
        return [_line(lines[0], r, len(lead)), *(Text(line) for line in lines[1:])]
    out = [_line(lead + word + r.check + GAP + r.subject, r, len(lead))]
    out.extend(Text(line) for line in wrap(r.summary, width, indent=under, first=under))
    if r.remedy:
        fix = wrap(f"fix: {r.remedy}", width, indent=under, first=under)
        out.extend(Text(line, style="cyan") for line in fix)
    return out
