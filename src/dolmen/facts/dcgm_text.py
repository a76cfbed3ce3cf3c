"""The human-readable ``dcgmi diag -r N`` result table, read into the same facts as ``-j``.

People paste the table, not the JSON (DCGM 2.4, 3.0, 3.3 print it alike)::

    Successfully ran diagnostic for group.
    +---------------------------+------------------------------------------------+
    | Diagnostic                | Result                                         |
    +===========================+================================================+
    |-----  Metadata  ----------+------------------------------------------------|
    | DCGM Version              | 3.3.7                                          |
    |-----  Deployment  --------+------------------------------------------------|
    | Denylist                  | Pass                                           |
    +-----  Integration  -------+------------------------------------------------+
    | PCIe                      | Fail - All                                     |
    | Warning                   | GPU 0GPU 0's NvLink link 0 is currently down   |
    |                           | Run a field diagnostic on the GPU., GPU 0GPU   |

A result is ``Pass``/``Fail``/``Warn``/``Skip``, alone (the run as a whole), ``- All``, or
``- GPU: 0`` / ``- GPUs: 0, 1`` (DCGM's GPU ids); a test's other GPUs follow on rows with an
empty name. ``Warning``/``Info`` rows belong to the test above; DCGM cuts their text in
fixed-width pieces, mid-word, stripping the spaces at the cuts, so a piece as long as the
longest was cut mid-word and the others at a space. Pasted tables are often cut: the rows
read are kept, the last row without its closing ``|`` is not (its value may be cut too), and
``unread["rest"]`` says the rest is unseen. Pure; never raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dolmen.facts.dcgm import DcgmFacts, DiagResult

BANNER = "Successfully ran diagnostic for group."
_SECTION = re.compile(r"^[|+]-+\s+([A-Za-z][A-Za-z /]*?)\s+-+[+|]")
_ROW = re.compile(r"^\|([^|]*)\|(.*)$")
_RESULT = re.compile(r"^(pass|fail|warn|warning|skip|skipped)\b\s*(?:-\s*(.*))?$", re.I)
_GPUS = re.compile(r"^GPUs?\s*:?\s*([\d,\s]+)$", re.I)
_NOTES = {"warning": "messages", "info": "info"}
_WORDS = {"warning": "warn", "skipped": "skip"}
_MAX_LINES = 20_000  # a diagnostic table is a few dozen rows


@dataclass
class _Test:
    """One test's rows while the table is read (results, then its Warning/Info pieces)."""

    category: str
    name: str
    statuses: list[tuple[str, int | None]] = field(default_factory=list)
    notes: dict[str, list[list[str]]] = field(default_factory=dict)


def parse_dcgm_text(text: str) -> DcgmFacts:
    """The results of the ``dcgmi diag`` table in ``text`` (see module docstring)."""
    lines = text.replace("\r\n", "\n").split("\n")[:_MAX_LINES]
    while lines and not lines[-1].strip():
        lines.pop()
    section = "?"
    meta: dict[str, str] = {}
    tests: list[_Test] = []
    note: list[str] | None = None
    cut: str | None = None
    seen_table = False
    for n, raw in enumerate(lines):
        line = raw.strip()
        if m := _SECTION.match(line):
            section, note, seen_table = m[1].strip(), None, True
            continue
        if n == len(lines) - 1 and line.startswith("|") and not line.endswith("|"):
            cut = (line[1:].split("|")[0].strip() or "a row") if seen_table else None
            break
        row = _ROW.match(line)
        if row is None:
            continue
        name, value = row[1].strip(), row[2].rstrip("|").strip()
        if name.lower() in ("diagnostic",) and value.lower() == "result":
            seen_table = True
            continue
        if section.lower() == "metadata" and name:
            meta[name] = value
            continue
        if name.lower() in _NOTES and tests:
            note = []
            tests[-1].notes.setdefault(_NOTES[name.lower()], []).append(note)
            note.append(value)
            continue
        if not name and note is not None:
            note.append(value)
            continue
        note = None
        status = _result(value)
        if status is None:
            continue
        if name:
            tests.append(_Test(section, name))
        elif not tests:
            continue
        tests[-1].statuses.extend(status)
    return _facts(tests, meta, cut, seen_table)


def _facts(tests: list[_Test], meta: dict[str, str], cut: str | None, seen: bool) -> DcgmFacts:
    results: list[DiagResult] = []
    for t in tests:
        messages = tuple(_join(p) for p in t.notes.get("messages", []))
        info = tuple(_join(p) for p in t.notes.get("info", []))
        for status, gpu in t.statuses:
            results.append(DiagResult(t.category, t.name, status, gpu, messages, (), info))
    unread: dict[str, str] = {}
    if not results:
        what = "no test result" if seen else "not a dcgmi diag result table"
        unread["diag"] = f"malformed: {what}" + (f" (cut off at {cut!r})" if cut else "")
    elif cut is not None:
        unread["rest"] = f"cut off at {cut!r}: the tests after it are not in this bundle"
    return DcgmFacts(
        tuple(results),
        meta.get("DCGM Version") or None,
        meta.get("Driver Version Detected") or None,
        unread=unread,
    )


def _result(value: str) -> list[tuple[str, int | None]] | None:
    """``Pass``, ``Fail - All``, ``Warn - GPU: 0``, ``Pass - GPUs: 0, 1``: (status, GPU id)."""
    m = _RESULT.match(value)
    if m is None:
        return None
    status = _WORDS.get(m[1].lower(), m[1].lower())
    scope = (m[2] or "").strip()
    ids = _GPUS.match(scope)
    if ids is None:
        return [(status, None)]  # the run as a whole, or "All": no one GPU named
    gpus = [int(p) for p in re.split(r"[,\s]+", ids[1]) if p.isdigit()]
    return [(status, g) for g in dict.fromkeys(gpus)] or [(status, None)]


def _join(pieces: list[str]) -> str:
    """A wrapped cell's text: pieces as long as the longest were cut mid-word."""
    width = max((len(p) for p in pieces[:-1]), default=0)
    out = ""
    for i, p in enumerate(pieces):
        sep = "" if i == 0 or len(pieces[i - 1]) >= width else " "
        out += sep + p
    return out.strip()
