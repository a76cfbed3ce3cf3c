"""The shipped rules against real dolmen metrics in a real Prometheus, all on 127.0.0.1.

Two nodes, as the standard tier's timer leaves them: `dolmen validate --from <tree>
--prometheus` writes each node's textfile (the sample node whose GPU 3 fell off the bus,
and the same node healthy), a real node_exporter per node serves it, a real Prometheus
scrapes both every second and evaluates dolmen-rules.yml with every `for:` cut to 0s (the
rule logic is the shipped one; only the waiting is shortened). The alerts API must show
DolmenNodeUnhealthy and DolmenCheckFailing firing for the broken node only, with the GPU's
labels, and nothing about staleness for either."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from dolmen import demo
from tests.packaging import prometheus
from tests.packaging.common import dolmen_program, free_port

pytestmark = [pytest.mark.service, pytest.mark.slow]

NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
if prometheus.PROMETHEUS is None or NODE_EXPORTER is None:
    pytest.skip(
        "prometheus or node_exporter is not installed (Debian: prometheus, "
        "prometheus-node-exporter)",
        allow_module_level=True,
    )


@pytest.fixture(scope="module")
def alerts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[dict[str, Any]]]:
    work = tmp_path_factory.mktemp("scrape")
    dolmen = dolmen_program(work)
    procs: list[subprocess.Popen[bytes]] = []
    targets = {}
    try:
        for sample, code in (("hgx-h100-xid79", 1), ("hgx-h100", 0)):
            tree = demo.build_sample(sample, work / sample)
            textfile = work / f"{sample}-textfile"
            textfile.mkdir()
            done = subprocess.run(
                [dolmen, "validate", "--from", str(tree), "--level", "standard",
                 "--prometheus", str(textfile / "dolmen-standard.prom")],
                capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert done.returncode == code, done.stdout + done.stderr
            port = free_port()
            procs.append(
                prometheus.start(
                    [
                        str(NODE_EXPORTER),
                        f"--web.listen-address=127.0.0.1:{port}",
                        "--collector.disable-defaults",
                        "--collector.textfile",
                        f"--collector.textfile.directory={textfile}",
                    ],
                    work / f"{sample}-node_exporter.log",
                )
            )
            targets[sample] = f"127.0.0.1:{port}"
        prom, api = prometheus.run_prometheus(
            work,
            "  - job_name: node\n"
            "    static_configs:\n"
            f"      - targets: ['{targets['hgx-h100-xid79']}']\n"
            "        labels: {node: broken}\n"
            f"      - targets: ['{targets['hgx-h100']}']\n"
            "        labels: {node: healthy}\n",
        )
        procs.append(prom)
        names = {"DolmenNodeUnhealthy", "DolmenCheckFailing"}
        firing = prometheus.firing_once(prom, api, work / "prometheus.log", names)
        health = prometheus.get(f"{api}/query?query=dolmen_health")["data"]["result"]
        assert {r["metric"]["node"]: r["value"][1] for r in health} == {
            "broken": "2",
            "healthy": "0",
        }
        yield firing
    finally:
        for p in reversed(procs):
            prometheus.stop(p)


def test_unhealthy_fires_for_the_broken_node_only(alerts: list[dict[str, Any]]) -> None:
    unhealthy = [a for a in alerts if a["labels"]["alertname"] == "DolmenNodeUnhealthy"]
    assert [a["labels"]["node"] for a in unhealthy] == ["broken"], alerts
    [a] = unhealthy
    assert a["labels"]["level"] == "standard" and a["labels"]["severity"] == "critical"
    assert a["annotations"]["summary"].endswith("dolmen says unhealthy (standard tier)")


def test_failing_gpu_checks_carry_the_gpu(alerts: list[dict[str, Any]]) -> None:
    failing = [a["labels"] for a in alerts if a["labels"]["alertname"] == "DolmenCheckFailing"]
    assert {f["node"] for f in failing} == {"broken"}
    lost = [f for f in failing if f["check"] == "gpu.lost"]
    assert [(f["gpu"], f["pci_bus_id"]) for f in lost] == [("3", "00000000:86:00.0")]


def test_nothing_else_fires(alerts: list[dict[str, Any]]) -> None:
    """Fresh files, no check error, both targets up: no staleness, no undecided, no down."""
    names = {a["labels"]["alertname"] for a in alerts}
    assert names == {"DolmenNodeUnhealthy", "DolmenCheckFailing"}, names
