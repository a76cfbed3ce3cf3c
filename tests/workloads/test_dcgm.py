"""The dcgm workload: ``dcgmi diag -r N -j`` run through the live host, its output read by
the bundle parser (dolmen.facts.dcgm). A stand-in ``dcgmi`` on PATH prints a diagnostic
and records its arguments: no real ``dcgmi diag -j`` JSON with a usable licence exists in
../shared/recordings (PROVENANCE.md, gaps), so the documents are tests/facts/test_dcgm.py's,
built on DCGM's own schema (testing/python3/dcgm_diag_schema.json)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dolmen.host.live import LiveHost
from dolmen.workloads import dcgm
from dolmen.workloads.model import Request, Unavailable
from tests.facts.test_dcgm import NEW, OLD


def fake_dcgmi(folder: Path, stdout: str, rc: int = 0, sleep: float = 0) -> Path:
    """An executable ``dcgmi`` in ``folder`` printing ``stdout``; ``args`` gets its argv."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "out.json").write_text(stdout)
    script = folder / "dcgmi"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$@" > "{folder}/args"\n'
        f"sleep {sleep}\n"
        f'cat "{folder}/out.json"\n'
        f"exit {rc}\n"
    )
    script.chmod(0o755)
    return folder


@pytest.fixture
def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return folder


CUDA = Request(device="cuda", gpus=(0, 1), budget_s=30, dcgm_level=3)


def test_the_site_level_is_run_level_1_by_default(on_path: Path) -> None:
    fake_dcgmi(on_path, json.dumps(NEW), rc=1)
    assert dcgm.run(Request(device="cuda", gpus=(0, 1), budget_s=30)).level == 1
    assert (on_path / "args").read_text().split() == ["diag", "-r", "1", "-j"]


def test_full_runs_the_site_level_3_and_folds_every_test(on_path: Path) -> None:
    fake_dcgmi(on_path, json.dumps(NEW), rc=1)  # dcgmi exits 1 when a test failed
    result = dcgm.run(CUDA)
    assert (on_path / "args").read_text().split() == ["diag", "-r", "3", "-j"]
    assert result.level == 3 and result.rc == 1 and result.facts.version == "4.2.3"
    tests = result.to_json()["tests"]
    assert {(t["name"], t["gpu"], t["status"]) for t in tests} == {
        ("Denylist", 0, "pass"),
        ("Denylist", 1, "pass"),
        ("Memory", 0, "pass"),
        ("Memory", 1, "fail"),
    }
    assert next(t for t in tests if t["status"] == "fail")["info"] == "GPU 1 DBE"


def test_smoke_runs_level_1_and_reads_the_old_layout(on_path: Path) -> None:
    fake_dcgmi(on_path, json.dumps(OLD))
    result = dcgm.run(Request(device="cuda", gpus=(0,), smoke=True, budget_s=0.05))
    assert (on_path / "args").read_text().split() == ["diag", "-r", "1", "-j"]
    assert result.level == 1 and {r.status for r in result.facts.results} >= {"warn", "pass"}


def test_missing_dcgmi_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(Unavailable, match="dcgmi not installed"):
        dcgm.run(CUDA)


def test_cpu_device_does_not_run_dcgm(on_path: Path) -> None:
    fake_dcgmi(on_path, json.dumps(NEW))
    with pytest.raises(Unavailable, match="--device cpu"):
        dcgm.run(Request(device="cpu"))
    assert not (on_path / "args").exists()


def test_budget_is_the_timeout(on_path: Path) -> None:
    fake_dcgmi(on_path, json.dumps(NEW), sleep=5)
    with pytest.raises(Unavailable, match=r"did not finish within its budget of 0.3 s .*dcgm_s"):
        dcgm.run(Request(device="cuda", gpus=(0,), budget_s=0.3), LiveHost())


@pytest.mark.parametrize(
    ("stdout", "rc", "reason"),
    [
        ("", 255, "command failed"),  # nv-hostengine not running: nothing on stdout
        ('{"DCGM Diagnostic": {"test_', 0, "malformed"),
        ("Error: unable to establish a connection", 255, "malformed"),
    ],
)
def test_unreadable_output_is_kept_as_unread(
    on_path: Path, stdout: str, rc: int, reason: str
) -> None:
    fake_dcgmi(on_path, stdout, rc=rc)
    result = dcgm.run(CUDA)
    assert reason in result.facts.unread["diag"] and not result.facts.results


def test_argv_refuses_unknown_levels() -> None:
    assert dcgm.argv(2) == ("dcgmi", "diag", "-r", "2", "-j")
    with pytest.raises(ValueError, match="valid levels: 1, 2, 3, 4"):
        dcgm.argv(5)
