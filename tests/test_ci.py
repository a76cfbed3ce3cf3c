"""scripts/ci and scripts/ci-python: they parse, the torch pin they install is the CPU
build of pyproject's pin, and a machine without pyenv gets one line and exit 0 (the
main pass alone), never a failed CI."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dolmen.compat import tomllib

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = [REPO / "scripts" / "ci", REPO / "scripts" / "ci-python", REPO / ".ci" / "run"]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_the_scripts_parse(script: Path) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    assert os.access(script, os.X_OK), f"{script} is not executable"
    res = subprocess.run([bash, "-n", str(script)], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr


def test_the_torch_pin_is_pyprojects_cpu_build() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert extras["torch"] == ["torch==2.13.0"]
    assert not any(r.startswith("torch") for r in extras["test"]), "PyPI gives the CUDA build"
    for script in SCRIPTS[:2]:
        pin = re.search(r"TORCH_PIN=\$\{TORCH_PIN:-(\S+)\}", script.read_text())
        assert pin is not None and pin[1] == extras["torch"][0] + "+cpu", script


def test_without_pyenv_one_line_and_exit_0(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",  # no pyenv shims
        "HOME": str(tmp_path),  # no ~/.pyenv
    }
    res = subprocess.run(
        [str(REPO / "scripts" / "ci-python"), "--others"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ci-python: pyenv not found: "), lines


def test_the_others_leave_out_list_names_test_files_that_exist() -> None:
    """A renamed or removed file would leave a stale line that skips nothing, or an
    --ignore of a path that now holds other tests."""
    listed = [
        line.split("#", 1)[0].strip()
        for line in (REPO / "scripts" / "ci-others-leave-out.txt").read_text().splitlines()
    ]
    paths = [p for p in listed if p]
    assert paths, "the list is empty: the other interpreters would run every test (say so instead)"
    for p in paths:
        file, _, test = p.partition("::")
        assert (REPO / file).is_file() and file.startswith("tests/") and file.endswith(".py"), p
        if test:  # one test of a file whose others stay: it must still be there
            assert re.search(rf"^def {re.escape(test)}\(", (REPO / file).read_text(), re.M), p
            assert file not in paths, f"{p}: its whole file is left out already"
    assert len(set(paths)) == len(paths)
