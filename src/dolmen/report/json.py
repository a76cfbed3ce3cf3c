"""``--json``: the ``dolmen.verdict/1`` document (docs/verdict-schema.md)."""

from __future__ import annotations

import json
from typing import Any

from dolmen.checks.model import Finding
from dolmen.checks.verdict import SCHEMA, Verdict
from dolmen.facts import to_jsonable


def verdict_document(v: Verdict) -> dict[str, Any]:
    """The verdict as plain JSON values, in the documented schema."""
    return {
        "schema": SCHEMA,
        "host": v.host,
        "status": v.health.value,
        "exit_code": int(v.health.exit_code),
        "level": v.level,
        "started": v.started,
        "duration_s": round(v.duration_s, 4),
        "dolmen_version": v.version,
        "source": to_jsonable(v.source),
        "counts": v.counts,
        "coverage": to_jsonable(v.coverage),
        "inventory": to_jsonable(v.inventory),
        "findings": [_finding(f) for f in v.findings],
    }


def _finding(f: Finding) -> dict[str, Any]:
    """One finding; ``device`` (index, uuid, serial, model, pci_bus_id: the keys some source
    gave) only where the subject is a GPU."""
    row = {
        "check": f.check,
        "category": f.category,
        "status": f.status.value,
        "subject": f.subject,
        "summary": f.summary,
        "remedy": f.remedy,
        "gating": f.gating,
        "evidence": to_jsonable(f.evidence),
    }
    if f.device is not None:
        row["device"] = f.device.known()
    return row


def render_json(v: Verdict) -> str:
    """The verdict document with one finding per line (greppable, diffable) and a trailing
    newline. Each piece goes through the C encoder: ``indent=`` would force the pure-Python
    one, 6 ms of a 140 ms quick run that node-problem-detector or cron start every minutes."""
    doc = verdict_document(v)
    findings = doc.pop("findings")
    head = json.dumps(doc)[:-1]
    if not findings:
        return f'{head}, "findings": []}}\n'
    rows = ",\n  ".join(json.dumps(f) for f in findings)
    return f'{head}, "findings": [\n  {rows}\n]}}\n'
