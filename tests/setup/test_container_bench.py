"""The containers step's benchmark with a real podman (setup/container_bench.py).

No registry: two images are made here from this machine's Python (tests/packaging/image.py,
the helper the agent image test uses), one with this virtualenv's CPU torch and one
without it, and ``podman import``ed into private storage (CONTAINERS_CONF and
CONTAINERS_STORAGE_CONF under tmp; runc, vfs, no network), as
tests/containers/test_podman_real.py does. ``dolmen setup --yes --bench-device cpu
--bench-image ...`` runs the benchmark through the audited launch: the GEMM's figures
land in setup's state and a dolmen.bench/1 bench.json. The skip paths are real too: an
image not in the store (nothing pulled), an image without torch, no runtime on the PATH,
no GPU answering. The CDI path of a GPU run is tests/containers/test_podman_real.py's.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dolmen.cli.main import main
from dolmen.host.live import LiveHost
from dolmen.report.bench.document import load_bench
from tests.packaging import image
from tests.podman import Podman, private_config
from tests.report.contract import assert_valid
from tests.setup.conftest import audit_events

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("podman") is None, reason="podman is not installed"),
    pytest.mark.skipif(shutil.which("runc") is None, reason="runc is not installed"),
    pytest.mark.skipif(
        sys.version_info[:2] != (3, 11),
        reason="the offline image is made of Debian's python3.11 and this venv's 3.11 wheels",
    ),
]

TORCH = "localhost/dolmen-setup-torch:test"
NO_TORCH = "localhost/dolmen-setup-python:test"
ABSENT = "localhost/dolmen-setup-never-pulled:test"
ONLY = ["--skip", "validate,stack,tune,scheduler,users"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Private podman storage holding the two images (module-wide: the torch one is big)."""
    why = image.missing()
    if why:
        pytest.skip(f"cannot build the offline image: {why}")
    if not (Path(sys.prefix) / "lib/python3.11/site-packages/torch").is_dir():
        pytest.skip("torch is not installed in this virtualenv (pip install torch==2.13.0)")
    work = tmp_path_factory.mktemp("podman")
    podman = Podman(work)  # imports in a private mount namespace (its docstring says why)
    try:
        for tag, extra in ((NO_TORCH, ()), (TORCH, ("torch", "torchgen"))):
            root = image.build_rootfs(work / "rootfs", extra=extra)
            tar = image.rootfs_tar(root, work / "rootfs.tar")
            shutil.rmtree(root)
            done = podman("import", str(tar), tag)
            tar.unlink()
            assert done.returncode == 0, done.stderr[-2000:]
        yield work
    finally:
        podman("rmi", "--all", "--force")
        podman("system", "reset", "--force")


@pytest.fixture
def podman_env(store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in private_config(store).items():
        monkeypatch.setenv(key, value)
    return store


def _setup(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    rc = main(["setup", "--json", *ONLY, *args])
    doc = assert_valid(json.loads(capsys.readouterr().out))
    return rc, {s["step"]: s for s in doc["steps"]}


def test_the_benchmark_runs_in_the_image_and_is_kept(
    podman_env: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, steps = _setup(capsys, "--dry-run", "--bench-device", "cpu", "--bench-image", TORCH)
    assert rc == 0 and steps["containers"]["status"] == "planned"
    assert steps["containers"]["lines"][-1].startswith(
        f"benchmark: a short GEMM on the CPU in {TORCH}"
    )
    assert not (dolmen_dirs / "bench").exists()  # a dry run starts nothing

    rc, steps = _setup(capsys, "--yes", "--bench-device", "cpu", "--bench-image", TORCH)
    step = steps["containers"]
    assert rc == 0 and step["status"] == "done", step
    data = step["data"]
    assert data["image"] == TORCH and data["runtime"] == "podman" and data["device"] == "cpu"
    assert data["torch"].startswith("2.") and data["gemm"][0]["subject"] == "host"
    assert data["gemm"][0]["dtype"] == "fp32" and data["gemm"][0]["tflops"] > 0
    bench = load_bench(data["bench_json"])  # held to dolmen.bench/1
    entry = bench["results"]["gemm"]["gpus"][0]
    assert bench["device"] == "cpu" and bench["container"]["image"] == TORCH
    assert entry["tflops"] == data["gemm"][0]["tflops"] and entry["iterations"] >= 1
    assert any(line.startswith("  gemm host fp32: ") for line in step["lines"])

    record = json.loads((dolmen_dirs / "setup/state.json").read_text())["steps"]["containers"]
    assert record["status"] == "done" and record["data"] == data
    events = audit_events(dolmen_dirs, "containers.run")
    assert [(o, d["phase"]) for o, d in events] == [("unknown", "intent"), ("success", "outcome")]
    argv = events[0][1]["argv"]
    assert isinstance(argv, list)
    assert argv[:3] == ["podman", "run", "--rm"] and "--network" in argv and TORCH in argv

    rc, steps = _setup(capsys, "--yes", "--bench-device", "cpu", "--bench-image", TORCH)
    assert rc == 0 and "not run again" in steps["containers"]["lines"][0]  # resumable


def test_an_image_without_torch_is_skipped_naming_it(
    podman_env: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, steps = _setup(capsys, "--yes", "--bench-device", "cpu", "--bench-image", NO_TORCH)
    step = steps["containers"]
    assert rc == 0 and step["status"] == "skipped", step
    assert step["lines"][-1].startswith(f"benchmark skipped: no torch in {NO_TORCH} (")
    assert "No module named 'torch'" in step["lines"][-1]
    record = json.loads((dolmen_dirs / "setup/state.json").read_text())["steps"]["containers"]
    assert record["status"] == "skipped"  # the next run tries again
    events = audit_events(dolmen_dirs, "containers.run")
    assert [(o, d.get("exit_status")) for o, d in events] == [("unknown", None), ("failure", 3)]


def test_an_image_not_pulled_names_the_pull_and_pulls_nothing(
    podman_env: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = LiveHost().run(["podman", "images", "--format", "{{.Repository}}"], timeout=60)
    rc, steps = _setup(capsys, "--yes", "--bench-device", "cpu", "--bench-image", ABSENT)
    step = steps["containers"]
    assert rc == 0 and step["status"] == "skipped"
    assert f"image not pulled: {ABSENT} is not in the local store of podman" in step["lines"][-1]
    assert f"`podman pull {ABSENT}`" in step["lines"][-1]
    after = LiveHost().run(["podman", "images", "--format", "{{.Repository}}"], timeout=60)
    assert after.stdout == before.stdout and "never-pulled" not in after.stdout
    assert audit_events(dolmen_dirs, "containers.run") == []  # nothing started


def test_no_runtime_and_no_gpu_are_named(
    podman_env: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # this machine has no NVIDIA driver: the default (the GPUs) cannot run
    rc, steps = _setup(capsys, "--yes", "--bench-image", TORCH)
    line = steps["containers"]["lines"][-1]
    assert rc == 0 and steps["containers"]["status"] == "skipped"
    assert line.startswith("benchmark skipped: no GPU answered (") and "--bench-device cpu" in line
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    rc, steps = _setup(
        capsys, "--yes", "--restart", "--bench-device", "cpu", "--bench-image", TORCH
    )
    line = steps["containers"]["lines"][-1]
    assert rc == 0 and steps["containers"]["status"] == "skipped"
    assert "no container runtime: neither docker nor podman is on the PATH" in line
    assert os.environ["PATH"] == str(empty)


def _ready(image: str, command: tuple[str, ...], device: str) -> Any:
    """A benchmark ready to start as prepare() makes one, with the command given."""
    from dolmen.containers.plan import Request, plan
    from dolmen.containers.site import gather
    from dolmen.setup.container_bench import Ready

    req = Request(image, command, runtime="podman", gpus="none", network="none")
    return Ready(req, plan(req, gather(LiveHost())), device, ("gpu:0000:18:00.0",))


def _context() -> Any:
    from dolmen.setup.model import Context, Options

    return Context(LiveHost(), Options(bench_device="cpu"))


def test_a_container_that_sees_no_gpu_fails_the_step(podman_env: Path, dolmen_dirs: Path) -> None:
    # The real script asked for CUDA in an image whose torch has none: what a node whose
    # container runtime does not pass the GPUs shows.
    from dolmen.containers import smoke
    from dolmen.setup.container_bench import run

    got = run(_context(), _ready(TORCH, smoke.command("cuda"), "cuda"), ("resolved",))
    assert got.status.value == "failed" and got.exit_code == 1
    assert got.lines[0] == "resolved"  # the plan's lines lead, then the launch's notes
    [line] = [x for x in got.lines if "sees no GPU" in x]
    assert "sees no GPU although the driver lists 1: the podman launch" in line
    assert not list((dolmen_dirs / "bench").rglob("bench.json"))


def test_a_container_that_fails_shows_the_end_of_its_output(
    podman_env: Path, dolmen_dirs: Path
) -> None:
    from dolmen.setup.container_bench import run

    script = "i=0; while [ $i -lt 3000 ]; do echo line $i; i=$((i+1)); done; exit 9"
    got = run(_context(), _ready(TORCH, ("sh", "-c", script), "cpu"), ())
    assert got.status.value == "failed" and got.exit_code == 1
    lines = [x for x in got.lines if not x.startswith("note: ")]
    assert lines[0].startswith("the benchmark container exited 9 (the output holds no")
    assert lines[1:] == ["  | line 2997", "  | line 2998", "  | line 2999"]
