"""``validate --level full`` from the command line: --device/--force, both entries agree,
and torch stays out of every run that does not start a workload."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.cli.lean import parse
from dolmen.cli.main import main
from tests.cli.test_validate import _fresh_python, _run
from tests.hosts import scenarios


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenarios.build("h100-hgx-healthy", tmp_path_factory.mktemp("full") / "tree")


FULL = [
    ["validate", "--level", "full", "--from", "{T}", "--device", "cpu", "--json"],
    ["validate", "--level=full", "--from={T}", "--device=CUDA", "--force", "--npd"],
    ["validate", "--level", "quick", "--from", "{T}", "--device", "cpu"],
    ["validate", "--from", "{T}", "--force"],
]


@pytest.mark.parametrize("argv", FULL, ids=lambda a: " ".join(a).replace("{T}", "T"))
def test_lean_and_click_agree_on_the_full_flags(
    argv: list[str], tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [a.replace("{T}", str(tree)) for a in argv]
    assert parse(args) is not None
    assert _run(capsys, args, tree, lean=True) == _run(capsys, args, tree, lean=False)


def test_device_and_force_need_level_full(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _run(capsys, ["validate", "--from", str(tree), "--device", "cpu"], tree, True)  # type: ignore[misc]
    assert rc == 2
    assert "--device applies to the workloads of --level full" in err


def test_a_bad_device_is_left_to_click() -> None:
    assert parse(["validate", "--level", "full", "--device", "tpu"]) is None


def test_a_bundle_at_level_full_runs_no_workload(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, doc, _ = _run(
        capsys, ["validate", "--level", "full", "--from", str(tree), "--json"], tree, True
    )  # type: ignore[misc]
    assert rc == 2  # undecided: a bundle cannot run the workloads of level full
    work = [f for f in doc["findings"] if f["check"].startswith("workload.")]  # type: ignore[index]
    assert work and all(f["status"] in ("skip", "unknown") for f in work)


def test_no_check_run_imports_torch(tree: Path) -> None:
    """torch costs 3 s a start: only a workload may import it, never dolmen.checks."""
    code = (
        "import sys\nimport dolmen.checks\nfrom dolmen.checks import load_registry\n"
        "load_registry()\nfrom dolmen.cli.main import main\n"
        f"rc = main(['validate', '--level', 'full', '--from', {str(tree)!r}, '--npd'])\n"
        "print('torch' in sys.modules)\n"
    )
    assert _fresh_python(code).splitlines()[-1] == "False"


def test_without_a_gpu_the_workloads_run_on_the_cpu_and_say_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from dolmen.cli.validate_full import workloads_for
    from dolmen.config import Config, parse_config
    from dolmen.host.live import LiveHost

    host = LiveHost()
    if [g for g in host.gpus.gpus if not g.lost]:
        pytest.skip("this machine has a GPU")
    ws = workloads_for(host, Config(), None, False)
    assert ws is not None and ws.device == "cpu" and ws.gpus == ()
    assert "no NVIDIA GPU seen: the workloads run on the CPU" in capsys.readouterr().err
    chosen = workloads_for(LiveHost(), parse_config('[workloads]\ndevice = "cuda"\n'), None, False)
    assert chosen is not None and chosen.device == "cuda"  # the site said so: its checks
    # will say why CUDA cannot run, rather than a CPU run passing for the GPUs
    assert workloads_for(LiveHost(), Config(), "cpu", True).force  # type: ignore[union-attr]


@pytest.mark.parametrize("lean", [True, False])
def test_slurm_refuses_before_any_workload_starts(
    lean: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--slurm once ran every workload (minutes on a GPU) and only then found scontrol
    missing: the contract's needs are asked first, and nothing starts without them."""
    tools = tmp_path / "bin"
    tools.mkdir()
    monkeypatch.setenv("PATH", str(tools))  # no scontrol here (nor anything else)
    config = tmp_path / "dolmen.toml"
    config.write_text("[workloads]\ngemm_s = 600\n")  # ten minutes, were it started
    argv = ["validate", "--level", "full", "--device", "cpu", "--only", "workload.gemm"]
    rc = main([*argv, "--slurm", "--config", str(config)], lean=lean)
    out, err = capsys.readouterr()
    assert rc == 3, err  # the environment refused (docs/exit-codes.md)
    assert "full tier" not in err  # announced before the first workload: none started
    assert (
        err.splitlines()[0]
        == "dolmen: error: scontrol is not installed here (scontrol not found on PATH)"
    )
    assert out == ""
