"""Ctrl-C during ``validate --level full`` for real: a process of its own, SIGINT while the
GEMM runs on CPU torch, one line and exit 130 (docs/exit-codes.md), no traceback."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dolmen.cli.progress import line, terminal_progress

SRC = Path(__file__).resolve().parents[2] / "src"


def test_ctrl_c_stops_the_workloads_with_one_line(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="torch is not installed (scripts/ci: torch==2.13.0+cpu)")
    config = tmp_path / "dolmen.toml"
    config.write_text("[workloads]\ngemm_s = 120\nmemory_s = 120\n")
    env = {k: v for k, v in os.environ.items() if k != "DOLMEN_DEBUG"} | {"PYTHONPATH": str(SRC)}
    # A process started with SIGINT ignored (a background job of a script, a test that left
    # it so) keeps ignoring it: the child restores Python's own handler first, as a terminal
    # session has it.
    code = (
        "import signal, sys\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from dolmen.cli.main import main\nsys.exit(main())"
    )
    argv = [sys.executable, "-c", code]
    argv += ["validate", "--level", "full", "--device", "cpu", "--only", "workload.gemm"]
    proc = subprocess.Popen(
        [*argv, "--config", str(config)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    first = proc.stderr.readline()  # printed before the first workload starts
    assert first.startswith("full tier: about 2 min on the CPU (gemm)"), first
    time.sleep(4.0)  # into the GEMM loop (torch takes about 3 s to import here)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err
    assert err.strip().splitlines() == [
        "dolmen: interrupted during gemm: workloads stopped, GPU memory freed; no verdict"
    ]
    assert out == ""  # no verdict, no half report


def test_the_bar_is_drawn_on_a_terminal_only() -> None:
    assert terminal_progress(io.StringIO()) is None  # a pipe, a file: no bar
    assert line("gemm gpu 0 bf16", 0.5, 65.0, width=10) == (
        f"{'gemm gpu 0 bf16':<40} [#####-----]  50%  ETA 1:05"
    )
    assert line("memory", 2.0, None, width=4).endswith("[####] 100%")
    assert line("memory", -1.0, -5.0, width=4).endswith("[----]   0%")
