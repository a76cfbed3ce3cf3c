"""A real Prometheus for the packaging tests: on 127.0.0.1 and a free port, its storage
in the test's folder, the shipped rules with every ``for:`` cut to 0s (the rule logic is
the shipped one; only the waiting is shortened), stopped by its own PID."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.packaging.common import PACKAGING, free_port

PROMETHEUS = shutil.which("prometheus")


def start(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    """A process of the test's, its output in ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End a process started here, by its own PID."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def get(url: str) -> Any:
    """The JSON an HTTP API answers."""
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def run_prometheus(work: Path, scrape_configs: str) -> tuple[subprocess.Popen[bytes], str]:
    """Prometheus scraping every second with the shipped rules; (process, API base URL)."""
    assert PROMETHEUS is not None
    rules = (PACKAGING / "prometheus/dolmen-rules.yml").read_text()
    (work / "rules.yml").write_text(re.sub(r"^(\s+)for: \S+$", r"\1for: 0s", rules, flags=re.M))
    (work / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"rule_files: [{work / 'rules.yml'}]\n"
        f"scrape_configs:\n{scrape_configs}"
    )
    port = free_port()
    prom = start(
        [
            PROMETHEUS,
            f"--config.file={work / 'prometheus.yml'}",
            f"--storage.tsdb.path={work / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        work / "prometheus.log",
    )
    return prom, f"http://127.0.0.1:{port}/api/v1"


def firing_once(
    prom: subprocess.Popen[bytes], api: str, log: Path, names: set[str], seconds: float = 60
) -> list[dict[str, Any]]:
    """The firing alerts once ``names`` all fire, and a few evaluations later (nothing else
    may join); what fires at the deadline otherwise (the test's assertions say what is
    missing)."""
    deadline = time.monotonic() + seconds
    firing: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        assert prom.poll() is None, log.read_text()[-2000:]
        try:
            got = get(f"{api}/alerts")["data"]["alerts"]
        except OSError:
            got = []
        firing = [a for a in got if a["state"] == "firing"]
        if names <= {a["labels"]["alertname"] for a in firing}:
            time.sleep(3)  # three more evaluations
            return [a for a in get(f"{api}/alerts")["data"]["alerts"] if a["state"] == "firing"]
        time.sleep(0.5)
    return firing
