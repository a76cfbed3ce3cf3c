"""One node's verdict document, as another machine sent it: checked before it is believed.

A verdict arrives as bytes from a file, an agent or an srun task; any of them may be
cut off, junk or hostile. ``parse_verdict`` is pure: it returns the document or the
one-line reason it is not one (never raises). ``verdict_of`` rebuilds the
``checks.verdict.Verdict`` from it, so that health and the one-line drain reason are
computed by the very code the node's own health check runs (the two never disagree).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from dolmen.checks.model import Finding, Status
from dolmen.checks.verdict import Verdict
from dolmen.fsutil import not_utf8

SCHEMA = "dolmen.verdict/1"
# A node name becomes a folder name in the store: plain names only (no "/", no "..").
_NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")
_STATUSES = {s.value for s in Status}
_HEALTH = ("healthy", "degraded", "unhealthy", "undecided")


class NotAVerdict(ValueError):
    """The bytes are not a dolmen.verdict/1 document; the message says why, in one line."""


def node_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a node in the store, or None when it can."""
    if not isinstance(name, str) or not name:
        return "no host name"
    if not _NODE.match(name):
        return f"host name {name[:60]!r} is not a plain node name (letters, digits, . _ -)"
    return None


def parse_verdict(data: bytes) -> dict[str, Any]:
    """The verdict document in ``data``; NotAVerdict naming what is wrong otherwise."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotAVerdict(not_utf8(e)) from None
    if not text.strip():
        raise NotAVerdict("empty")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        # A file cut mid-write ends inside a value, a string or a literal (``nu`` of null):
        # name it as such.
        rest = text[e.pos :].strip()
        cut = not rest or e.msg.startswith("Unterminated string")
        cut = cut or any(word.startswith(rest) for word in ("null", "true", "false"))
        what = "cut off (truncated JSON)" if cut else f"not JSON ({e.msg})"
        raise NotAVerdict(f"{what} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise NotAVerdict("not JSON (nested too deep)") from None
    if not isinstance(doc, dict):
        raise NotAVerdict(f"a JSON {type(doc).__name__}, not a verdict object")
    if doc.get("schema") != SCHEMA:
        raise NotAVerdict(f"schema is {str(doc.get('schema'))[:40]!r}, not {SCHEMA}")
    problem = node_name_problem(doc.get("host"))
    if problem:
        raise NotAVerdict(problem)
    if doc.get("status") not in _HEALTH:
        raise NotAVerdict(f"status {str(doc.get('status'))[:30]!r} is not one of {_HEALTH}")
    findings = doc.get("findings")
    if not isinstance(findings, list):
        raise NotAVerdict("no findings list")
    for i, f in enumerate(findings):
        if not isinstance(f, dict) or not isinstance(f.get("check"), str):
            raise NotAVerdict(f"finding {i} has no check id")
        if f.get("status") not in _STATUSES:
            raise NotAVerdict(f"finding {i} ({f['check'][:40]}) has no valid status")
        if not isinstance(f.get("subject"), str):
            raise NotAVerdict(f"finding {i} ({f['check'][:40]}) has no subject")
    for key in ("inventory", "coverage", "counts", "source"):
        if key in doc and not isinstance(doc[key], dict):
            raise NotAVerdict(f"{key} is not an object")
    return doc


def verdict_of(doc: Mapping[str, Any]) -> Verdict:
    """The Verdict a parsed document describes (devices left out: not needed to judge)."""
    findings = tuple(
        Finding(
            check=f["check"],
            category=str(f.get("category") or f["check"].split(".", 1)[0]),
            status=Status(f["status"]),
            subject=f["subject"],
            summary=str(f.get("summary") or ""),
            remedy=f.get("remedy") if isinstance(f.get("remedy"), str) else None,
            evidence=f["evidence"] if isinstance(f.get("evidence"), dict) else {},
            gating=f.get("gating") is not False,
        )
        for f in doc["findings"]
    )
    coverage = {
        k: v
        for k, v in (doc.get("coverage") or {}).items()
        if isinstance(v, dict) and isinstance(v.get("state"), str)
    }
    return Verdict(
        host=doc["host"],
        level=str(doc.get("level") or ""),
        findings=findings,
        started=str(doc.get("started") or ""),
        duration_s=float(doc.get("duration_s") or 0),
        coverage=coverage,
    )


def obj(d: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``d[key]`` when it is an object, else an empty one: a verdict from another machine
    may hold anything where an object is expected."""
    v = d.get(key)
    return v if isinstance(v, dict) else {}
