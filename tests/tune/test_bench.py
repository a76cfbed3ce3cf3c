"""bench/tune_ab.py: the A/B harness drives the real apply/rollback and leaves the host as
it found it; its statistics are reproducible."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from tests.tune.trees import snapshot

BENCH = Path(__file__).resolve().parents[2] / "bench" / "tune_ab.py"


def _module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("tune_ab", BENCH)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bootstrap_interval_brackets_the_ratio() -> None:
    ab = _module()
    a, b = [100.0, 101.0, 99.0, 100.5], [110.0, 111.0, 109.0, 110.5]
    lo, hi = ab.bootstrap_ratio(a, b)
    assert lo <= 1.1 <= hi and (lo, hi) == ab.bootstrap_ratio(a, b)
    assert "ratio B/A of medians: 1.100" in ab.report("p", a, b, "w")


def test_ab_on_a_host_tree_restores_it(host_tree: Path, dolmen_dirs: Path, tmp_path: Path) -> None:
    before = snapshot(host_tree)
    env = {
        **os.environ,
        "DOLMEN_STATE_DIR": str(tmp_path / "state"),
        "DOLMEN_CONFIG_DIR": str(dolmen_dirs),
    }
    workload = [sys.executable, "-c", "print('throughput 42.0')"]
    cmd = [sys.executable, str(BENCH), "ab", "--profile", "workstation", "--root", str(host_tree)]
    res = subprocess.run(
        [*cmd, "--runs", "2", "--", *workload], env=env, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    assert "ratio B/A of medians: 1.000" in res.stdout and "A: 42.0 42.0" in res.stdout
    assert snapshot(host_tree) == before


def test_tcp_workload_prints_its_throughput() -> None:
    res = subprocess.run(
        [sys.executable, str(BENCH), "tcp", "--seconds", "0.2"], capture_output=True, text=True
    )
    assert res.returncode == 0 and float(res.stdout.split()[-1]) > 0
