"""The dolmen wheel of this checkout, built from a copy of it: a build never writes into
the checkout (setuptools leaves build/ and *.egg-info where it builds, and two
interpreters' test passes run side by side on one checkout in CI)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def dolmen_wheel(out: Path) -> Path:
    """Build the wheel into ``out/dist`` (from ``out/src-copy``) with this interpreter."""
    src = out / "src-copy"
    shutil.copytree(
        REPO / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, src / name)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out / "dist"), str(src)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [wheel] = (out / "dist").glob("dolmen-*.whl")
    return wheel
