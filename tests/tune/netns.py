"""A network namespace of the test's own for tune's real kernel writes (net.* sysctls and
NIC features are per namespace, so the machine's own stay as they are), the commands run
inside it, and the environment of a ``dolmen tune`` child there."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


@contextlib.contextmanager
def private_netns(name: str) -> Iterator[str]:
    """``ip netns add NAME``, deleted on the way out; a skip where this machine cannot."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 to create a network namespace")
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot create a network namespace here: {made.stderr.strip()}")
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def in_ns(
    ns: str, *argv: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", "netns", "exec", ns, *argv], capture_output=True, text=True, env=env, timeout=60
    )


def tune_env(state: Path, config: Path) -> dict[str, str]:
    """This process's environment for a ``dolmen tune`` child of this checkout, with the
    test's state and config folders and no crash point."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "DOLMEN_STATE_DIR": str(state),
           "DOLMEN_CONFIG_DIR": str(config), "COLUMNS": "200"}  # fmt: skip
    env.pop("DOLMEN_TUNE_CRASH_AT", None)
    return env
