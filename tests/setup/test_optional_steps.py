"""The stack and containers steps of ``dolmen setup`` (setup/step_stack.py,
setup/step_containers.py), in-process on the healthy 8x H100 tree and on one without its
driver: the lock written once into the state folder and held by ``dolmen stack diff``,
the NGC release for the tree's driver, and an unread driver said, never guessed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dolmen.cli.main import main
from dolmen.host import open_host
from dolmen.setup.step_stack import lock_path
from dolmen.stack.lockfile import load
from tests.hosts import scenarios
from tests.report.contract import assert_valid

SKIP = ["--skip", "validate,tune,scheduler,users"]


def _setup(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    rc = main(["setup", "--json", *args])
    doc = assert_valid(json.loads(capsys.readouterr().out))
    return rc, {s["step"]: s for s in doc["steps"]}


def test_the_plan_names_the_stack_and_the_release_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], h100: Path, dolmen_dirs: Path
) -> None:
    rc, steps = _setup(capsys, "--from", str(h100), "--dry-run", *SKIP)
    assert rc == 0
    stack, containers = steps["stack"], steps["containers"]
    assert stack["status"] == "planned" and "components known (h100-node-01)" in stack["lines"][0]
    assert any(line.startswith("  driver: 580.105.08") for line in stack["lines"])
    assert stack["lines"][-1].startswith(f"write the lock to {lock_path(open_host(h100))}")
    assert containers["status"] == "planned"
    assert containers["lines"][0].startswith("nvcr.io/nvidia/pytorch:")
    assert containers["lines"][-1].startswith(f"benchmark: not run on a tree ({h100}): ")
    assert not dolmen_dirs.exists() or not any(dolmen_dirs.rglob("*.toml"))


def test_the_lock_is_written_once_and_the_tree_holds_it(
    capsys: pytest.CaptureFixture[str], h100: Path
) -> None:
    rc, steps = _setup(capsys, "--from", str(h100), "--yes", *SKIP)
    assert rc == 0, steps
    assert steps["stack"]["status"] == "done" and steps["containers"]["status"] == "done"
    lock = lock_path(open_host(h100))
    assert steps["stack"]["lines"][-1] == f"wrote {lock}"
    assert load(lock).host == "h100-node-01"
    assert main(["stack", "diff", str(lock), "--from", str(h100)]) == 0  # no drift
    capsys.readouterr()
    rc, steps = _setup(capsys, "--from", str(h100), "--yes", *SKIP)
    assert rc == 0 and "not run again" in steps["stack"]["lines"][0]
    before = lock.read_bytes()
    rc, steps = _setup(capsys, "--from", str(h100), "--yes", "--restart", *SKIP)
    assert rc == 0 and steps["stack"]["lines"][-1].endswith("as written before, nothing to change")
    assert lock.read_bytes() == before


def test_an_unread_driver_is_unknown_and_the_flow_goes_on(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tree = scenarios.build("missing-driver", tmp_path / "tree")
    rc, steps = _setup(capsys, "--from", str(tree), "--yes", *SKIP)
    containers = steps["containers"]
    assert rc == 2 and containers["status"] == "unknown" and containers["exit_code"] == 2
    assert "dolmen does not guess" in containers["lines"][0]
    assert steps["stack"]["status"] in ("done", "unknown")  # what the tree shows of it
