"""The metric names the shipped rules and dashboard may use, from their sources of truth.

- dolmen's: what ``render_prometheus`` writes for a real verdict (the names are read from a
  rendering, not copied), plus the agent's own series fixed in the serve contract
  (coord iface11: ``dolmen serve`` adds them to the same names).
- dcgm-exporter's: the fields of its etc/default-counters.csv (NVIDIA/dcgm-exporter), and
  the ECC counter that file lists commented out (GpuEccDoubleBitErrors says so).
- Prometheus's own ``up`` and the ``ALERTS`` series of its rule evaluation.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

AGENT = frozenset(
    {
        "dolmen_build_info",
        "dolmen_agent_verdict_age_seconds",
        "dolmen_agent_runs_total",
        "dolmen_agent_up",
    }
)

DCGM_DEFAULT = frozenset(
    {
        "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_MEM_CLOCK",
        "DCGM_FI_DEV_MEMORY_TEMP",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "DCGM_FI_DEV_PCIE_TX_THROUGHPUT",
        "DCGM_FI_DEV_PCIE_RX_THROUGHPUT",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        "DCGM_FI_DEV_ENC_UTIL",
        "DCGM_FI_DEV_DEC_UTIL",
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    }
)
DCGM_OPTIONAL = frozenset({"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"})
PROMETHEUS = frozenset({"up", "ALERTS"})

# dcgm-exporter's labels (its render_metrics) and dolmen's (report/prometheus.py).
DCGM_LABELS = frozenset({"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"})
DOLMEN_LABELS = frozenset({"level", "check", "subject", "status", "version", "python"})


@cache
def dolmen_written(tmp: Path) -> frozenset[str]:
    """Every metric name dolmen writes for the sample node whose GPU fell off the bus."""
    from dolmen import demo
    from dolmen.checks.model import Level
    from dolmen.checks.suite import validate
    from dolmen.config import Config
    from dolmen.host import open_host
    from dolmen.report.prometheus import render_prometheus

    tree = demo.build_sample("hgx-h100-xid79", tmp / "xid79")
    with open_host(tree) as host:
        text = render_prometheus(validate(host, level=Level.QUICK, config=Config()))
    return frozenset(re.findall(r"^(\w+)\{", text, re.M))


def known(tmp: Path) -> frozenset[str]:
    return dolmen_written(tmp) | AGENT | DCGM_DEFAULT | DCGM_OPTIONAL | PROMETHEUS


def names_in(expr: str) -> set[str]:
    """Metric names in a PromQL expression: identifiers before ``{``, ``[``, ``)`` or an
    operator that are ours or dcgm's (``dolmen_*``, ``DCGM_*``), or ``up``/``ALERTS``."""
    words = set(re.findall(r"\b[A-Za-z_:][\w:]*\b", re.sub(r'"[^"]*"', "", expr)))
    return {w for w in words if w.startswith(("dolmen_", "DCGM_")) or w in PROMETHEUS}
