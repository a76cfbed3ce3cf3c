"""``--prometheus FILE``: the node_exporter textfile-collector format, written atomically."""

from __future__ import annotations

from datetime import datetime

from dolmen.checks.model import Status
from dolmen.checks.verdict import Health, Verdict

HEALTH_VALUE = {Health.HEALTHY: 0, Health.DEGRADED: 1, Health.UNHEALTHY: 2, Health.UNDECIDED: 3}


def render_prometheus(v: Verdict) -> str:
    """Metrics for one run. Status per check and subject is a 0/1 gauge per status label."""
    lines = [
        "# HELP dolmen_health Verdict of the last dolmen validate run "
        "(0 healthy, 1 degraded, 2 unhealthy, 3 undecided).",
        "# TYPE dolmen_health gauge",
        f'dolmen_health{{level="{_esc(v.level)}"}} {HEALTH_VALUE[v.health]}',
        "# HELP dolmen_findings Findings of the last run by status.",
        "# TYPE dolmen_findings gauge",
    ]
    lines += [f'dolmen_findings{{status="{s}"}} {n}' for s, n in v.counts.items()]
    lines += [
        "# HELP dolmen_check_status 1 for the status each check reported for each subject.",
        "# TYPE dolmen_check_status gauge",
    ]
    for f in sorted(v.findings, key=lambda f: (f.check, f.subject)):
        if f.status is Status.SKIP:
            continue
        lines.append(
            f'dolmen_check_status{{check="{_esc(f.check)}",subject="{_esc(f.subject)}",'
            f'status="{f.status.value}"}} 1'
        )
    started = datetime.fromisoformat(v.started.replace("Z", "+00:00")).timestamp()
    lines += [
        "# HELP dolmen_validate_duration_seconds Wall time of the last run.",
        "# TYPE dolmen_validate_duration_seconds gauge",
        f"dolmen_validate_duration_seconds {v.duration_s:.6f}",
        "# HELP dolmen_validate_timestamp_seconds When the last run started (Unix time).",
        "# TYPE dolmen_validate_timestamp_seconds gauge",
        f"dolmen_validate_timestamp_seconds {started:.0f}",
    ]
    return "\n".join(lines) + "\n"


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
