"""The shipped rules against real dolmen metrics in a real Prometheus, all on 127.0.0.1.

Two nodes, as the standard tier's timer leaves them: `dolmen validate --from <tree>
--prometheus` writes each node's textfile (the sample node whose GPU 3 fell off the bus,
and the same node healthy), a real node_exporter per node serves it, a real Prometheus
scrapes both every second and evaluates dolmen-rules.yml with every `for:` cut to 0s (the
rule logic is the shipped one; only the waiting is shortened). The alerts API must show
DolmenNodeUnhealthy and DolmenCheckFailing firing for the broken node only, with the GPU's
labels, and nothing about staleness for either."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dolmen import demo
from tests.packaging.common import PACKAGING, dolmen_program, free_port

pytestmark = [pytest.mark.service, pytest.mark.slow]

PROMETHEUS = shutil.which("prometheus")
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
if PROMETHEUS is None or NODE_EXPORTER is None:
    pytest.skip(
        "prometheus or node_exporter is not installed (Debian: prometheus, "
        "prometheus-node-exporter)",
        allow_module_level=True,
    )


def _start(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()  # by its own PID, started here
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


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
                _start(
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
        rules = re.sub(r"^(\s+)for: \S+$", r"\1for: 0s", (PACKAGING / "prometheus/dolmen-rules.yml").read_text(), flags=re.M)  # fmt: skip
        (work / "rules.yml").write_text(rules)
        (work / "prometheus.yml").write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            f"rule_files: [{work / 'rules.yml'}]\n"
            "scrape_configs:\n"
            "  - job_name: node\n"
            "    static_configs:\n"
            f"      - targets: ['{targets['hgx-h100-xid79']}']\n"
            "        labels: {node: broken}\n"
            f"      - targets: ['{targets['hgx-h100']}']\n"
            "        labels: {node: healthy}\n"
        )
        port = free_port()
        prom = _start(
            [
                str(PROMETHEUS),
                f"--config.file={work / 'prometheus.yml'}",
                f"--storage.tsdb.path={work / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            work / "prometheus.log",
        )
        procs.append(prom)
        api = f"http://127.0.0.1:{port}/api/v1"
        deadline = time.monotonic() + 60
        firing: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            assert prom.poll() is None, (work / "prometheus.log").read_text()[-2000:]
            try:
                got = _get(f"{api}/alerts")["data"]["alerts"]
            except OSError:
                got = []
            firing = [a for a in got if a["state"] == "firing"]
            names = {a["labels"]["alertname"] for a in firing}
            if {"DolmenNodeUnhealthy", "DolmenCheckFailing"} <= names:
                time.sleep(3)  # a few more evaluations: nothing else may join
                firing = [
                    a for a in _get(f"{api}/alerts")["data"]["alerts"] if a["state"] == "firing"
                ]
                break
            time.sleep(0.5)
        health = _get(f"{api}/query?query=dolmen_health")["data"]["result"]
        assert {r["metric"]["node"]: r["value"][1] for r in health} == {
            "broken": "2",
            "healthy": "0",
        }
        yield firing
    finally:
        for p in reversed(procs):
            _stop(p)


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
