"""scripts/gpu-run.sh --dry-run: the GPU session's one script, run here on CPU torch with
tiny budgets, from a dolmen wheel built from this checkout, so a GPU session never spends
its minutes on a script that does not work. Slow: a wheel, a venv, the full tier, a bench."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dolmen.host import open_host
from dolmen.report.bench.document import load_bench
from tests.wheel import dolmen_wheel

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu-run.sh"
STEPS = ["install", "where", "snapshot", "validate-full", "bench", "overhead", "total"]

pytestmark = [pytest.mark.slow]


def test_the_dry_run_does_every_step_from_the_wheel(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "out"
    wheels = dolmen_wheel(tmp_path / "build").parent
    env = {**os.environ, "WHEELS": str(wheels), "OUT": str(out), "PYTHON": sys.executable}
    run = subprocess.run(
        ["bash", str(SCRIPT), "--dry-run"], capture_output=True, text=True, env=env, timeout=600
    )
    assert run.returncode == 0, run.stderr[-3000:]
    rows = [line.split("\t") for line in (out / "timings.tsv").read_text().splitlines()[1:]]
    assert [r[0] for r in rows] == STEPS
    exits = {r[0]: int(r[2]) for r in rows}
    assert exits["validate-full"] == 2  # on the CPU the full tier is undecided by design
    assert all(v == 0 for k, v in exits.items() if k != "validate-full"), exits
    assert all(float(r[1]) >= 0 for r in rows)
    where = (out / "where.out").read_text().splitlines()[0]
    assert not where.startswith(str(ROOT)), where  # the wheel's dolmen, not the checkout's
    doc = load_bench(out / "bench" / "bench.json")
    assert doc["device"] == "cpu" and doc["smoke"] and {"gemm", "memory"} <= set(doc["results"])
    verdict = (out / "validate-full.out").read_text()
    assert '"status": "undecided"' in verdict or '"undecided"' in verdict
    with open_host(out / "snapshot.tar.gz") as host:
        assert host.kind != "live" and host.hostname
    summary = (out / "summary.txt").read_text()
    assert summary.startswith("total wall ") and "ratio" in summary


def test_unknown_options_and_missing_wheels_are_one_line(tmp_path: Path) -> None:
    bad = subprocess.run(["bash", str(SCRIPT), "--gpu"], capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr == "gpu-run.sh: unknown option --gpu (--prepare, --dry-run)\n"
    env = {**os.environ, "WHEELS": str(tmp_path), "OUT": str(tmp_path / "o")}
    none = subprocess.run(
        ["bash", str(SCRIPT), "--dry-run"], capture_output=True, text=True, env=env
    )
    assert none.returncode == 2 and "run scripts/gpu-run.sh --prepare first" in none.stderr
