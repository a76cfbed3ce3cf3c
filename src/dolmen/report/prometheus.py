"""``--prometheus FILE``: the node_exporter textfile-collector format, written atomically.

Every series carries the run's ``level``: a site that writes the quick tier from the health
check and the standard tier from cron into one textfile folder gets two sets of series, not
duplicates (node_exporter fails the whole scrape on a duplicate series).

A series about a GPU also carries dcgm-exporter's labels for that GPU, spelt as it spells
them (``gpu`` the index, ``UUID``, ``pci_bus_id`` as ``00000000:86:00.0``, ``modelName``),
so a query joins it with ``DCGM_FI_DEV_*`` (``on(UUID)`` or ``on(Hostname, gpu)`` after a
``label_replace``); a label whose value no source gave is left out. They follow from the
subject, so they never split one series in two.
"""

from __future__ import annotations

import platform

from dolmen.checks.model import Finding, Status
from dolmen.checks.verdict import Health, Verdict
from dolmen.compat import fromisoformat

HEALTH_VALUE = {Health.HEALTHY: 0, Health.DEGRADED: 1, Health.UNHEALTHY: 2, Health.UNDECIDED: 3}


def render_prometheus(v: Verdict) -> str:
    """Metrics for one run. Status per check and subject is a 0/1 gauge per status label."""
    level = f'level="{_esc(v.level)}"'
    lines = [
        "# HELP dolmen_build_info The dolmen that wrote these series (always 1).",
        "# TYPE dolmen_build_info gauge",
        f'dolmen_build_info{{{level},version="{_esc(v.version)}",'
        f'python="{_esc(platform.python_version())}"}} 1',
        "# HELP dolmen_health Verdict of the last dolmen validate run "
        "(0 healthy, 1 degraded, 2 unhealthy, 3 undecided).",
        "# TYPE dolmen_health gauge",
        f"dolmen_health{{{level}}} {HEALTH_VALUE[v.health]}",
        "# HELP dolmen_findings Findings of the last run by status.",
        "# TYPE dolmen_findings gauge",
    ]
    lines += [f'dolmen_findings{{{level},status="{s}"}} {n}' for s, n in v.counts.items()]
    lines += [
        "# HELP dolmen_check_status 1 for the status each check reported for each subject.",
        "# TYPE dolmen_check_status gauge",
    ]
    seen: set[tuple[str, str, Status]] = set()
    for f in sorted(v.findings, key=lambda f: (f.check, f.subject)):
        key = (f.check, f.subject, f.status)
        if f.status is Status.SKIP or key in seen:
            continue
        seen.add(key)  # two outcomes alike for one subject are one series, never a duplicate
        lines.append(
            f'dolmen_check_status{{{level},check="{_esc(f.check)}",subject="{_esc(f.subject)}",'
            f'{_gpu_labels(f)}status="{f.status.value}"}} 1'
        )
    started = fromisoformat(v.started.replace("Z", "+00:00")).timestamp()
    lines += [
        "# HELP dolmen_validate_duration_seconds Wall time of the last run.",
        "# TYPE dolmen_validate_duration_seconds gauge",
        f"dolmen_validate_duration_seconds{{{level}}} {v.duration_s:.6f}",
        "# HELP dolmen_validate_timestamp_seconds When the last run started (Unix time).",
        "# TYPE dolmen_validate_timestamp_seconds gauge",
        f"dolmen_validate_timestamp_seconds{{{level}}} {started:.0f}",
    ]
    return "\n".join(lines) + "\n"


# dcgm-exporter's label for each Device field (its render_metrics: gpu, UUID, pci_bus_id,
# modelName); the serial has none there.
DCGM_LABELS = (
    ("index", "gpu"),
    ("uuid", "UUID"),
    ("pci_bus_id", "pci_bus_id"),
    ("model", "modelName"),
)


def _gpu_labels(f: Finding) -> str:
    """``gpu="0",UUID="GPU-...",pci_bus_id="00000000:86:00.0",modelName="...",`` (the known
    ones) for a GPU finding, else nothing."""
    if f.device is None:
        return ""
    known = f.device.known()
    return "".join(f'{label}="{_esc(str(known[k]))}",' for k, label in DCGM_LABELS if k in known)


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
