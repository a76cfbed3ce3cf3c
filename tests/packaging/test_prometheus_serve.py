"""The shipped rules against ``dolmen serve`` itself, scraped by a real Prometheus, all on
127.0.0.1 (issue 14).

Two agents run their quick tier on host trees (GPU 3 fallen off the bus, and the same
node healthy), each with reads closed (``open_reads = false``): Prometheus scrapes their
/metrics with a viewer bearer token made by ``dolmen serve token add``, every second, as
job ``dolmen`` (DolmenAgentDown's selector), plus a third target where no agent listens.
The rules are dolmen-rules.yml with every ``for:`` cut to 0s. The alerts API must show
DolmenNodeUnhealthy and DolmenCheckFailing (gpu.lost on GPU 3) for the broken node only,
DolmenAgentDown for the silent target only, and nothing else; the query API must hold
the series the agent adds (``dolmen_agent_up``, the verdict's age, ``dolmen_build_info``)
for both agents."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.packaging import prometheus
from tests.packaging.common import free_port
from tests.serve.conftest import Served, dolmen

pytestmark = [pytest.mark.service, pytest.mark.slow]

if prometheus.PROMETHEUS is None:
    pytest.skip("prometheus is not installed (Debian: prometheus)", allow_module_level=True)

NODES = {"broken": "h100-xid79", "healthy": "h100-hgx-healthy"}


def _agent(home: Path, tree: Path) -> tuple[Served, str]:
    """A closed-reads agent on ``tree`` and a viewer token for it."""
    (home / "state").mkdir(parents=True)
    (home / "config").mkdir()
    (home / "config" / "dolmen.toml").write_text("[serve]\nopen_reads = false\n")
    made = dolmen(home, "serve", "token", "add", "prometheus", "--role", "viewer")
    assert made.returncode == 0, made.stderr
    agent = Served(home, "--from", str(tree), "--interval", "1h")
    assert agent.wait("/metrics", 401).status_code == 401  # closed: the token is needed
    return agent, made.stdout.strip()


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from tests.hosts import scenarios

    work = tmp_path_factory.mktemp("serve-scrape")
    agents: list[Served] = []
    procs: list[subprocess.Popen[bytes]] = []
    try:
        jobs = []
        for node, scenario in NODES.items():
            tree = scenarios.build(scenario, work / node / "tree")
            agent, token = _agent(work / node / "home", tree)
            agents.append(agent)
            agent.wait("/readyz")  # the first quick run is done
            jobs.append(
                f"  - job_name: dolmen-{node}\n"
                "    authorization: {type: Bearer, credentials: '" + token + "'}\n"
                f"    static_configs: [{{targets: ['127.0.0.1:{agent.port}'], "
                f"labels: {{node: {node}}}}}]\n"
            )
        jobs.append(
            "  - job_name: dolmen-down\n"
            f"    static_configs: [{{targets: ['127.0.0.1:{free_port()}'], "
            "labels: {node: down}}]\n"
        )
        prom, api = prometheus.run_prometheus(work, "".join(jobs))
        procs.append(prom)
        names = {"DolmenNodeUnhealthy", "DolmenCheckFailing", "DolmenAgentDown"}
        firing = prometheus.firing_once(prom, api, work / "prometheus.log", names)

        def query(q: str) -> dict[str, str]:
            rows = prometheus.get(f"{api}/query?query={q}")["data"]["result"]
            return {r["metric"]["node"]: r["value"][1] for r in rows}

        yield {
            "firing": firing,
            "up": query("up"),
            "health": query("dolmen_health"),
            "agent_up": query("dolmen_agent_up"),
            "age": query("dolmen_agent_verdict_age_seconds"),
            "build": query("dolmen_build_info"),
        }
    finally:
        for p in procs:
            prometheus.stop(p)
        for a in agents:
            a.stop()


def test_the_token_lets_prometheus_in_and_the_silent_target_is_down(
    scraped: dict[str, Any],
) -> None:
    assert scraped["up"] == {"broken": "1", "healthy": "1", "down": "0"}
    assert scraped["agent_up"] == {"broken": "1", "healthy": "1"}
    assert set(scraped["build"]) == {"broken", "healthy"}
    assert all(float(v) < 600 for v in scraped["age"].values()), scraped["age"]


def test_unhealthy_and_the_failing_gpu_fire_for_the_broken_node_only(
    scraped: dict[str, Any],
) -> None:
    assert scraped["health"] == {"broken": "2", "healthy": "0"}
    firing = scraped["firing"]
    unhealthy = [a["labels"] for a in firing if a["labels"]["alertname"] == "DolmenNodeUnhealthy"]
    assert [(a["node"], a["level"]) for a in unhealthy] == [("broken", "quick")], firing
    failing = [a["labels"] for a in firing if a["labels"]["alertname"] == "DolmenCheckFailing"]
    assert {f["node"] for f in failing} == {"broken"}
    lost = [f for f in failing if f["check"] == "gpu.lost"]
    assert [(f["gpu"], f["pci_bus_id"]) for f in lost] == [("3", "00000000:86:00.0")], failing


def test_agent_down_fires_for_the_silent_target_and_nothing_else_fires(
    scraped: dict[str, Any],
) -> None:
    down = [a["labels"] for a in scraped["firing"] if a["labels"]["alertname"] == "DolmenAgentDown"]
    assert [d["node"] for d in down] == ["down"]
    names = {a["labels"]["alertname"] for a in scraped["firing"]}
    assert names == {"DolmenNodeUnhealthy", "DolmenCheckFailing", "DolmenAgentDown"}, names
