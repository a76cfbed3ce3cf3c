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
FULL = ("validate", "--level", "full", "--device", "cpu", "--only")


def _start(config: Path, *args: str) -> subprocess.Popen[str]:
    """``dolmen ARGS --config CONFIG`` in a process of its own."""
    env = {k: v for k, v in os.environ.items() if k != "DOLMEN_DEBUG"} | {"PYTHONPATH": str(SRC)}
    # A process started with SIGINT ignored (a background job of a script, a test that left
    # it so) keeps ignoring it: the child restores Python's own handler first, as a terminal
    # session has it.
    code = (
        "import signal, sys\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from dolmen.cli.main import main\nsys.exit(main())"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code, *args, "--config", str(config)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# SIGTERM is what scancel, systemctl stop and timeout(1) send: the same stop as Ctrl-C
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_stops_the_workloads_with_one_line(tmp_path: Path, signum: int) -> None:
    pytest.importorskip("torch", reason="torch is not installed (scripts/ci: torch==2.13.0+cpu)")
    config = tmp_path / "dolmen.toml"
    config.write_text("[workloads]\ngemm_s = 120\nmemory_s = 120\n")
    proc = _start(config, *FULL, "workload.gemm")
    assert proc.stderr is not None
    first = proc.stderr.readline()  # printed before the first workload starts
    assert first.startswith("full tier: about 2 min on the CPU (gemm)"), first
    time.sleep(4.0)  # into the GEMM loop (torch takes about 3 s to import here)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err
    # a CPU run has no GPU memory to speak of
    assert err.strip().splitlines() == [
        "dolmen: interrupted during gemm: workloads stopped, memory freed; no verdict"
    ]
    assert out == ""  # no verdict, no half report


def test_sigterm_during_storage_leaves_no_file_and_no_writer(tmp_path: Path) -> None:
    """fio runs in a session of its own: dying of SIGTERM once left it writing on, and its
    1 GiB file on the scratch mount."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    config = tmp_path / "dolmen.toml"
    config.write_text(f"[workloads]\nstorage_s = 120\nscratch = [{str(scratch)!r}]\n")
    proc = _start(config, *FULL, "workload.storage_io")
    assert proc.stderr is not None
    assert proc.stderr.readline().startswith("full tier: about 2 min on the CPU (storage)")
    deadline = time.monotonic() + 30
    while not any(scratch.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)  # until the writer has made its file
    assert any(scratch.iterdir()), "the storage workload never wrote its file"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert err.strip().splitlines()[-1].startswith("dolmen: interrupted during storage")
    assert list(scratch.iterdir()) == []


def test_a_timeout_during_the_workloads_stops_them_as_ctrl_c_does(tmp_path: Path) -> None:
    """--timeout shorter than the workloads: the backstop once ended the process in the
    middle of storage, fio writing on in its own session and its file left behind."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    config = tmp_path / "dolmen.toml"
    config.write_text(f"[workloads]\nstorage_s = 120\nscratch = [{str(scratch)!r}]\n")
    proc = _start(config, *FULL, "workload.storage_io", "--timeout", "2s")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, (out, err)  # undecided, not interrupted
    assert err.strip().splitlines()[-1] == (
        "dolmen: undecided: timed out after 2 s during storage: workloads stopped, memory "
        "freed; no verdict (the workloads' budgets are 120 s: raise --timeout above them)"
    )
    assert out == ""
    assert list(scratch.iterdir()) == []


def test_ctrl_c_during_bench_leaves_no_run_folder(tmp_path: Path) -> None:
    """The folder bench made for the run (checked before the first workload) goes with it:
    an interrupted run once left an empty one behind."""
    pytest.importorskip("torch", reason="torch is not installed (scripts/ci: torch==2.13.0+cpu)")
    config = tmp_path / "dolmen.toml"
    config.write_text("[workloads]\ngemm_s = 120\n")
    out = tmp_path / "run"
    proc = _start(config, "bench", "--device", "cpu", "--only", "gemm", "--out", str(out))
    assert proc.stderr is not None
    assert proc.stderr.readline().startswith("bench: about 2 min on the CPU (gemm)")
    assert out.is_dir()  # made ready before the run
    time.sleep(4.0)
    proc.send_signal(signal.SIGINT)
    out_text, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out_text, err)
    assert err.strip().splitlines() == [
        "dolmen: interrupted during gemm: workloads stopped, memory freed; no bench.json written"
    ]
    assert not out.exists()


def test_the_bar_is_drawn_on_a_terminal_only() -> None:
    assert terminal_progress(io.StringIO()) is None  # a pipe, a file: no bar
    assert line("gemm gpu 0 bf16", 0.5, 65.0, width=10) == (
        f"{'gemm gpu 0 bf16':<40} [#####-----]  50%  ETA 1:05"
    )
    assert line("memory", 2.0, None, width=4).endswith("[####] 100%")
    assert line("memory", -1.0, -5.0, width=4).endswith("[----]   0%")
