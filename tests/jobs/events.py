"""The audit events of a submission, as the tests of every backend read them."""

from __future__ import annotations

import os
from pathlib import Path

from dolmen.audit.reader import read_entries


def submit_events(backend: str, name: str, state: Path | None = None) -> list[tuple[str, str]]:
    """(outcome, phase or result) of the ``jobs.submit`` events of job ``name``, in order:
    ``[("unknown", "intent"), ("success", "success")]`` for a job the system took."""
    root = state or Path(os.environ["DOLMEN_STATE_DIR"])
    log = root / "audit" / "audit.log"
    if not log.exists():
        return []
    out = []
    for e in read_entries(log):
        ev = e.event
        if ev is None or ev.action != "jobs.submit" or ev.target != f"job:{backend}/{name}":
            continue
        out.append((ev.outcome, str(ev.details.get("result") or ev.details.get("phase"))))
    return out


def submit_job_id(backend: str, name: str, state: Path | None = None) -> str | None:
    """The job id the success outcome recorded, if any."""
    root = state or Path(os.environ["DOLMEN_STATE_DIR"])
    for e in read_entries(root / "audit" / "audit.log"):
        ev = e.event
        if ev is not None and ev.target == f"job:{backend}/{name}" and "job_id" in ev.details:
            return str(ev.details["job_id"])
    return None


TOOK = [("unknown", "intent"), ("success", "success")]
REFUSED = [("unknown", "intent"), ("failure", "refused")]
FAILED = [("unknown", "intent"), ("failure", "failed")]
