"""``GET /metrics``: what ``dolmen validate --prometheus`` writes for the latest verdict,
with dcgm-exporter's ``Hostname`` label added, plus the agent's own series.

The verdict's series come from ``report/prometheus.py`` unchanged (names, ``level``,
dcgm-exporter's ``gpu``, ``UUID``, ``pci_bus_id``, ``modelName``). dcgm-exporter labels
every series of a GPU with ``Hostname`` too, so that ``on(Hostname, gpu)`` joins work
without a ``label_replace``; a file for node_exporter gets its instance from the scrape,
but an agent's series are joined with dcgm-exporter's on the node name, so here every
series that carries ``UUID`` or ``gpu`` gets ``Hostname`` as well. Before the first run
``dolmen_build_info`` is written here (after it, the verdict's block carries it). The
verdict's block is rendered once per run (``verdict_block``), so a scrape costs a string
join: fifty scrapers a second are nothing to the node.
"""

from __future__ import annotations

import platform
from typing import TYPE_CHECKING

from dolmen import __version__
from dolmen.checks.verdict import Verdict
from dolmen.report.prometheus import render_prometheus

if TYPE_CHECKING:
    from dolmen.serve.agent import Agent


def verdict_block(verdict: Verdict) -> str:
    """``render_prometheus`` of one verdict, with ``Hostname`` (the verdict's host) on
    every series about a GPU: made once per run, served to every scrape."""
    lines = [_with_hostname(line, verdict.host) for line in render_prometheus(verdict).splitlines()]
    return "\n".join(lines) + "\n"


def render_metrics(agent: Agent, stored: str | None = None) -> str:
    """The whole exposition text: the latest verdict's block (the agent's, else the
    ``stored`` one of the history, else ``dolmen_build_info`` alone) and the agent's."""
    block = agent.metrics_block or stored or _build_info()
    age = agent.age()
    lines = [
        "# HELP dolmen_agent_up 1 while dolmen serve answers.",
        "# TYPE dolmen_agent_up gauge",
        "dolmen_agent_up 1",
        "# HELP dolmen_agent_runs_total Quick-tier runs the agent made since it started.",
        "# TYPE dolmen_agent_runs_total counter",
        f"dolmen_agent_runs_total {agent.runs_total}",
        "# HELP dolmen_agent_run_failures_total Runs that ended without a verdict.",
        "# TYPE dolmen_agent_run_failures_total counter",
        f"dolmen_agent_run_failures_total {agent.failures_total}",
        "# HELP dolmen_agent_run_stuck 1 while a run is past its deadline and grace.",
        "# TYPE dolmen_agent_run_stuck gauge",
        f"dolmen_agent_run_stuck {0 if agent.stuck() is None else 1}",
        "# HELP dolmen_agent_store_degraded 1 while the history cannot be written "
        "(read-only degraded mode).",
        "# TYPE dolmen_agent_store_degraded gauge",
        f"dolmen_agent_store_degraded {0 if agent.store.degraded is None else 1}",
    ]
    if age is not None:  # no verdict in this process yet: no age (absence is not zero)
        lines += [
            "# HELP dolmen_agent_verdict_age_seconds Age of the verdict the agent serves.",
            "# TYPE dolmen_agent_verdict_age_seconds gauge",
            f"dolmen_agent_verdict_age_seconds {age:.3f}",
        ]
    return block + "\n".join(lines) + "\n"


def _build_info() -> str:
    return (
        "# HELP dolmen_build_info The dolmen that wrote these series (always 1).\n"
        "# TYPE dolmen_build_info gauge\n"
        f'dolmen_build_info{{version="{__version__}",python="{platform.python_version()}"}} 1\n'
    )


def _with_hostname(line: str, hostname: str) -> str:
    """A series line about a GPU with ``Hostname="..."`` first among its labels."""
    if line.startswith("#") or ("UUID=" not in line and 'gpu="' not in line):
        return line
    name, brace, rest = line.partition("{")
    if not brace or "Hostname=" in rest:
        return line
    return f'{name}{{Hostname="{_esc(hostname)}",{rest}'


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
