"""What a failed Slurm test prints: everything needed to tell why the job ended as it did.

``job_report`` gathers, for one job: its output file (every run), the recovery
watcher's log, sacct's row for each run (``-D``: a requeued job keeps its id and
sacct keeps one row per run; only when the session started accounting),
``scontrol show job`` (Restarts, ExitCode, Reason of the latest run), the node
states, and the lines the daemons logged since the job was submitted
(slurmctld, each slurmd; without the lines each watcher probe causes) plus the tail of the nodes' health-check and hook logs.
A test passes it as its assertion message (a string: pytest shows it whole).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from tests.slurm.cluster import SlurmCluster

SACCT = "JobID,State,ExitCode,DerivedExitCode,Reason,NodeList,Submit,Start,End"
SCONTROL_KEYS = ("JobState", "Reason", "Restarts", "ExitCode", "NodeList", "BatchHost")
MAX_LINES = 150  # per daemon log: the job's window, its last lines first to go
HOOK_LINES = 20
# What slurmd logs (two lines) for each of the watcher's probes: a TCP connect to its
# port that sends no message (dolmen.slurm.probe). Counted, not shown.
PROBE_NOISE = "Zero Bytes were transmitted or received"
_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)\]")


def job_report(
    c: SlurmCluster, name: str, job_id: str, *, watch_log: Path | None = None, note: str = ""
) -> str:
    """The whole story of job ``job_id`` (named ``name``) for an assertion message."""
    parts = [f"=== job {job_id} ({name}) on the harness in {c.lab}" + (f": {note}" if note else "")]
    out = c.lab / "out" / f"{name}-{job_id}.out"
    parts += [_section(f"job output {out}", _read(out))]
    if watch_log is not None:
        parts.append(_section(f"watcher log {watch_log}", _read(watch_log)))
    parts.append(_section("sacct, one row per run (-D)", _sacct(c, job_id)))
    parts.append(_section("scontrol show job", _scontrol(c, job_id)))
    parts.append(_section("node states", _safe(lambda: str(c.node_states()))))
    since = _submitted_at(c.lab / "logs" / "slurmctld.log", job_id)
    for log in sorted((c.lab / "logs").glob("slurm*.log")):
        parts.append(_section(f"{log.name} since the submission ({since})", _window(log, since)))
    for log in sorted((c.lab / "logs").glob("hooks-*.log")):
        tail = _read(log).splitlines()[-HOOK_LINES:]
        parts.append(_section(f"{log.name}, last {HOOK_LINES} lines", "\n".join(tail)))
    return "\n".join(parts)


def _section(title: str, body: str) -> str:
    return f"--- {title}\n{body.rstrip() or '(empty)'}"


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError as e:
        return f"(unreadable: {e})"


def _safe(fn: Callable[[], str]) -> str:
    try:
        return fn()
    except Exception as e:  # a report must never hide the failure it explains
        return f"(failed: {e!r})"


def _sacct(c: SlurmCluster, job_id: str) -> str:
    def run() -> str:
        res = c.sl("sacct", "-D", "-X", "-P", "-j", job_id, "-o", SACCT, check=False)
        text = (res.stdout + res.stderr).strip()
        if res.returncode != 0 or "accounting storage is disabled" in text.lower():
            return f"(no accounting in this session: {text or res.returncode})"
        rows = text.splitlines()
        # sacct has no Restarts column: with -D the rows are the runs in order.
        return "\n".join(
            [f"run|{rows[0]}", *(f"{i}|{r}" for i, r in enumerate(rows[1:]))] if rows else []
        )

    return _safe(run)


def _scontrol(c: SlurmCluster, job_id: str) -> str:
    def run() -> str:
        res = c.sl("scontrol", "show", "job", "-o", job_id, check=False)
        if res.returncode != 0:
            return (res.stderr or res.stdout).strip()
        words = res.stdout.split()
        keep = [w for w in words if w.split("=", 1)[0] in SCONTROL_KEYS]
        return " ".join(keep) + "\n" + res.stdout.strip()

    return _safe(run)


def _submitted_at(ctld_log: Path, job_id: str) -> str:
    """The slurmctld timestamp of the job's submission ("" when not found: whole logs)."""
    marker = re.compile(rf"JobId={job_id}\b")
    for line in _read(ctld_log).splitlines():
        m = _STAMP.match(line)
        if m and marker.search(line):
            return m.group(1)
    return ""


def _window(log: Path, since: str) -> str:
    """The lines of a Slurm daemon log stamped ``since`` or later, at most MAX_LINES."""
    kept: list[str] = []
    keeping = not since
    probes = 0
    for line in _read(log).splitlines():
        m = _STAMP.match(line)
        if m:
            keeping = m.group(1) >= since
        if keeping and PROBE_NOISE in line:
            probes += 1
        elif keeping:
            kept.append(line)
    if len(kept) > MAX_LINES:
        kept = [f"({len(kept) - MAX_LINES} earlier lines left out)", *kept[-MAX_LINES:]]
    if probes:
        kept.append(f"({probes} lines '{PROBE_NOISE}' left out: the watcher's slurmd probes)")
    return "\n".join(kept)
