"""``dolmen bench`` end to end, in process: a real smoke run on the CPU, replotting a file,
--compare, named baselines, bad inputs, and a run without matplotlib (in a fresh
interpreter where importing it fails)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from dolmen.cli.main import main
from dolmen.report.bench.document import bench_schema
from dolmen.workloads import RUNNERS
from tests.report.bench.conftest import FIXTURES
from tests.report.bench.test_plots import assert_svg, png_size
from tests.report.contract import assert_valid

SRC = Path(__file__).resolve().parents[2] / "src"
REPO = SRC.parent
CPU = str(FIXTURES / "cpu-smoke.json")
GPU = str(FIXTURES / "h100x8.json")


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DOLMEN_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["bench", *argv], lean=False)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path, str]:
    """One real run of every workload of this build, smoke sizes, on the CPU; storage on
    a scratch folder the site config names (this VM has no data mount of its own)."""
    pytest.importorskip("torch", reason="torch is not installed (scripts/ci: torch==2.13.0+cpu)")
    base = tmp_path_factory.mktemp("run")
    (base / "scratch").mkdir()
    config = base / "dolmen.toml"
    config.write_text(f'[workloads]\nscratch = ["{base / "scratch"}"]\n')
    folder = base / "out"
    argv = ["bench", "--device", "cpu", "--smoke", "--config", str(config), "--out", str(folder)]
    proc = subprocess.run(
        [sys.executable, "-m", "dolmen.cli.main", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    return proc.returncode, folder, proc.stdout + proc.stderr


@pytest.mark.slow
def test_smoke_run_on_the_cpu(smoke_run: tuple[int, Path, str]) -> None:
    """Every workload for real (torch on the CPU, gloo, fio or the built-in engine), the
    document valid for jsonschema, a chart for each result that has one."""
    rc, folder, text = smoke_run
    doc = json.loads((folder / "bench.json").read_text())
    jsonschema.validate(doc, bench_schema())
    assert doc["device"] == "cpu" and doc["smoke"] is True
    assert set(doc["results"]) | set(doc["errors"]) == set(RUNNERS)  # each said what it did
    assert {"gemm", "memory", "collective", "storage"} <= set(doc["results"]), text
    assert doc["errors"]["dcgm"]  # DCGM loads GPUs: not on the CPU, and it says so
    assert rc == 0, text
    assert "dolmen bench:" in text and "smoke sizes" in text
    charts = {"gemm": "gemm", "collective": "busbw", "storage": "storage"}
    for result, stem in charts.items():
        drawn = (folder / f"{stem}.png").exists()
        assert drawn == (result in doc["results"]), (result, text)
        if drawn:
            png_size((folder / f"{stem}.png").read_bytes())
            assert_svg((folder / f"{stem}.svg").read_bytes())
    assert not (folder / "peer.png").exists()  # no peer matrix on the CPU


def test_input_replots_a_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A bench.json made elsewhere (a GPU node) drawn here; the 8-GPU charts are drawn in
    tests/report/bench/test_plots.py (seconds each on two cores)."""
    rc, out, err = _run(capsys, "--input", CPU, "--out", str(tmp_path / "plots"))
    assert rc == 0, err
    assert "GEMM  TFLOP/s per dtype on the CPU" in out and "written: " in out
    names = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert names == [
        "bench.json",
        "busbw.png",
        "busbw.svg",
        "gemm.png",
        "gemm.svg",
        "storage.png",
        "storage.svg",
    ]
    assert json.loads((tmp_path / "plots" / "bench.json").read_text()) == json.loads(
        Path(CPU).read_text()
    )


def test_json_goes_to_stdout_alone(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "--input", CPU, "--json")
    assert rc == 0 and json.loads(out)["host"] == "fixture-cpu-vm"


def test_compare(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "--compare", GPU, GPU)
    assert rc == 0
    assert "gpu:0000:18:00.0 bf16" in out and "1.000" in out
    rc, out, _ = _run(capsys, "--compare", CPU, GPU, "--json")
    doc = assert_valid(json.loads(out))  # dolmen.bench.compare/1: it once had no schema
    rows = doc["rows"]
    assert rc == 0 and rows[0]["a"] == 0.061 and rows[0]["ratio"] is None
    assert "A ran on cpu, B on cuda" in doc["notes"]  # what the terminal says, in the JSON too


@pytest.mark.parametrize(
    ("payload", "said"),
    [
        ("not json", "not JSON"),
        ('{"schema": "dolmen.verdict/1"}', "not a dolmen.bench/1 document"),
        ('{"schema": "dolmen.bench/1", "host": 3}', "malformed dolmen.bench/1: $: 'started'"),
    ],
)
def test_compare_refuses_junk_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, payload: str, said: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(payload)
    rc, out, err = _run(capsys, "--compare", CPU, str(bad))
    assert rc == 2 and out == ""
    first, hint = err.splitlines()
    assert first.startswith(f"dolmen: error: {bad}: ") and said in first
    assert hint.startswith("hint: ")


def test_baseline_save_then_compare(capsys: pytest.CaptureFixture[str], state: Path) -> None:
    rc, out, _ = _run(capsys, "--input", CPU, "--save-baseline", "before")
    assert rc == 0 and f"stored: {state}/bench/baselines/before.json" in out
    rc, out, _ = _run(capsys, "--list-baselines")
    assert out == "before\n"
    rc, out, _ = _run(capsys, "--input", CPU, "--baseline", "before")
    assert rc == 0 and "A: baseline before" in out and "B: this run" in out
    rc, _, err = _run(capsys, "--input", CPU, "--baseline", "after")
    assert rc == 2 and "no bench baseline named 'after' (stored: before)" in err


def test_a_run_that_measured_nothing_is_no_baseline(
    capsys: pytest.CaptureFixture[str], state: Path, tmp_path: Path
) -> None:
    empty = json.loads(Path(CPU).read_text())
    empty["results"], empty["errors"] = {}, {"gemm": "torch is not installed"}
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(empty))
    rc, out, _ = _run(capsys, "--input", str(path), "--save-baseline", "nothing")
    assert rc == 2 and "baseline 'nothing' not stored: this run measured nothing" in out
    assert not (state / "bench" / "baselines" / "nothing.json").exists()


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--only", "gemm,nope"], "unknown workload 'nope'"),
        (["--only", ","], "--only names no workload"),
        (["--save-baseline", "../x"], "baseline name '../x' is not allowed"),
        (["--compare", CPU, CPU, "--device", "cpu"], "--compare runs nothing: --device"),
        (["--list-baselines", "--out", "x"], "--list-baselines runs nothing: --out"),
        (["--input", CPU, "--smoke"], "--smoke applies to a run"),
        (["--out", "/nonexistent/a/b", "--device", "cpu"], "does not exist"),
        (["--input", "/nonexistent.json"], "no such file"),
        (["--config", "/nonexistent.toml", "--out", "{tmp}/never"], "nonexistent.toml"),
    ],
)
def test_bad_usage_is_refused_before_any_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], said: str
) -> None:
    rc, _, err = _run(capsys, *(a.replace("{tmp}", str(tmp_path)) for a in argv))
    assert not (tmp_path / "never").exists()  # nothing made for a run that never started
    assert rc == 2 and said in err, err
    if "unknown workload" in said:
        assert f"valid workloads: {', '.join(RUNNERS)}" in err


def test_without_matplotlib_the_json_is_written_and_the_plots_skipped(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"  # import matplotlib -> ImportError
        "from dolmen.cli.main import main\n"
        f"sys.exit(main(['bench', '--input', {CPU!r}, '--out', {str(tmp_path / 'o')!r}]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            "PYTHONPATH": str(SRC),
            "PATH": "/usr/bin:/bin",
            "DOLMEN_STATE_DIR": str(tmp_path / "state"),
        },
    )
    assert proc.returncode == 0, proc.stderr
    assert "plots skipped: matplotlib not installed (pip install 'dolmen[plots]')" in proc.stdout
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["bench.json"]
