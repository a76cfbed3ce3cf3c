"""``dolmen validate --timeout`` on the live host whose nvidia-smi never answers (a stand-in
script on PATH for a hung driver): the run returns at its deadline, undecided (exit 2),
naming nvidia-smi and the check that waited on it, in every output, and leaves no process
of the stand-in behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dolmen.cli.main import main
from dolmen.host.process import pid_alive

SRC = Path(__file__).resolve().parents[2] / "src"
ENTRY = "import sys; from dolmen.cli.main import main; sys.exit(main())"


@pytest.fixture
def hung_path(tmp_path: Path) -> Path:
    """A folder whose ``nvidia-smi`` writes its pid and its child's, then waits forever."""
    from dolmen.host.gpu.nvml import read_nvml

    if not str(read_nvml()).startswith("not loaded"):
        pytest.skip("NVML loads here: the live host would not run nvidia-smi")
    tool = tmp_path / "bin" / "nvidia-smi"
    tool.parent.mkdir()
    pids = tmp_path / "pids"
    tool.write_text(f"#!/bin/sh\necho $$ >> {pids}\nsleep 3600 &\necho $! >> {pids}\nwait\n")
    tool.chmod(0o755)
    return tool.parent


def _left(tmp_path: Path) -> list[int]:
    """The stand-in's processes still alive (none once it was killed with its group)."""
    time.sleep(0.1)
    pids = tmp_path / "pids"
    found = [int(p) for p in pids.read_text().split()] if pids.exists() else []
    assert found, "the stand-in never ran"
    return [p for p in found if pid_alive(p)]


@pytest.mark.slow
def test_a_hung_nvidia_smi_is_cut_at_the_timeout(hung_path: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{hung_path}:/usr/bin:/bin", "PYTHONPATH": str(SRC)}
    env.pop("DOLMEN_DEBUG", None)
    argv = [sys.executable, "-c", ENTRY, "validate", "--level", "quick", "--timeout", "3s"]
    t0 = time.monotonic()
    done = subprocess.run(
        [*argv, "--npd"], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    took = time.monotonic() - t0
    assert took < 6, f"took {took:.1f} s"
    assert done.returncode == 2, done.stderr
    line = done.stdout.strip()
    assert line.startswith("dolmen: undecided: timed out after 3 s on nvidia-smi"), line
    assert " in gpu." in line and len(line) <= 80
    assert _left(tmp_path) == []


def test_every_output_names_the_wait(
    hung_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PATH", f"{hung_path}:/usr/bin:/bin")
    base = ["validate", "--level", "quick", "--timeout", "1"]  # a number alone: seconds (NHC)
    assert main([*base, "--json", "--only", "gpu"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "undecided" and doc["exit_code"] == 2
    (late,) = [f for f in doc["findings"] if f["check"] == "run.timeout"]
    assert late["status"] == "unknown" and late["evidence"]["waiting_on"].startswith("nvidia-smi")
    assert late["evidence"]["check"].startswith("gpu.")
    assert main([*base, "--only", "gpu"]) == 2
    out = capsys.readouterr().out
    assert "run.timeout" in out and "timed out after 1 s waiting on nvidia-smi" in out
    assert _left(tmp_path) == []


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("0s", "--timeout '0s' must be longer than zero"),
        ("soon", "--timeout 'soon' is not a duration"),
        ("-5s", "--timeout '-5s' is negative"),
    ],
)
def test_a_bad_timeout_is_refused_before_the_run(
    value: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", "--level", "quick", f"--timeout={value}", "--npd"]) == 2
    assert said in capsys.readouterr().err


def test_the_checks_get_what_the_workloads_left(
    hung_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One deadline for a full run: the checks once got a fresh --timeout of their own once
    the workloads were done, so the run outlived it and the backstop ended it. Here a real
    GEMM on CPU torch takes about 1.5 s of a 4 s deadline, then a check waits on the hung
    nvidia-smi: the run ends at the deadline (not 1.5 s after it), naming nvidia-smi."""
    pytest.importorskip("torch", reason="torch is not installed (scripts/ci: torch==2.13.0+cpu)")
    from dolmen.checks.model import Level
    from dolmen.checks.suite import choose, validate
    from dolmen.config import parse_config
    from dolmen.host.deadline import Deadline
    from dolmen.host.live import LiveHost
    from dolmen.workloads.session import Workloads

    monkeypatch.setenv("PATH", f"{hung_path}:/usr/bin:/bin")
    config = parse_config("[workloads]\ngemm_s = 1.5\n")
    selection = choose(config, Level.FULL, ["workload.gemm", "gpu.present"])
    host = LiveHost()
    deadline = Deadline(4.0)
    t0 = time.monotonic()
    ws = Workloads(host, config, device="cpu", deadline=deadline)
    verdict = validate(
        host, level=Level.FULL, config=config, timeout=deadline, selection=selection, workloads=ws
    )
    took = time.monotonic() - t0
    assert ws.results()["gemm"].entries, "the GEMM did not run"
    assert 4.0 <= took < 5.0, f"took {took:.1f} s"
    (late,) = [f for f in verdict.findings if f.check == "run.timeout"]
    assert late.evidence["waiting_on"].startswith("nvidia-smi"), late.evidence
    assert late.summary.startswith("timed out after 4 s waiting on nvidia-smi")
    assert _left(tmp_path) == []
