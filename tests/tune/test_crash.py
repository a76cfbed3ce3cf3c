"""Fault injection: a real ``dolmen tune`` child process is SIGKILLed at every step of an apply
(and of a rollback); the next run detects it, and restores the byte-exact originals of the
whole tree (or completes the apply, as the user chooses).

The kill points are the test-only hook ``DOLMEN_TUNE_CRASH_AT`` (dolmen/tune/crash.py).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dolmen.host.tree import TreeHost
from dolmen.tune.engine import apply_plan
from dolmen.tune.journal import tune_dir
from dolmen.tune.planner import plan_profile
from dolmen.tune.profile import load_profile
from tests.tune.netns import tune_env
from tests.tune.trees import copy_tree, snapshot

# 11 steps on the test host: 2 sysctls, THP (a bracketed choice file), the governor of 4
# CPUs, a limits.d file (in a folder that exists), a GRUB drop-in (in a folder apply
# creates), and the two boot persistence files.
CRASHY = """\
[profile]
description = "crash test"
[sysctl]
"vm.swappiness" = 10
"vm.dirty_ratio" = 40
[sysfs]
"kernel/mm/transparent_hugepage/enabled" = "never"
[cpu]
governor = "performance"
[limits]
memlock = "unlimited"
[cmdline]
iommu = "pt"
"""
STEPS = 11
APPLY_POINTS = range(2 * STEPS + 2)
WORKERS = 2


def dolmen(
    tree: Path, state: Path, config: Path, *args: str, crash: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = tune_env(state, config)
    if crash is not None:
        env["DOLMEN_TUNE_CRASH_AT"] = crash
    cmd = [sys.executable, "-m", "dolmen.cli.main", "tune", *args, "--root", str(tree)]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)


def kill_then_recover(
    tree: Path, state: Path, config: Path, profile: str, point: int, choice: str, want: dict
) -> str | None:
    """SIGKILL an apply of ``profile`` at ``point``; the next run must see the interruption
    and ``recover choice`` (``--rollback`` or ``--complete``) must leave ``want`` (a
    snapshot). None when all holds, else what did not."""
    killed = dolmen(tree, state, config, "apply", profile, "--yes", crash=str(point))
    if killed.returncode != -signal.SIGKILL:
        return f"point {point}: not killed ({killed.returncode}): {killed.stderr}"
    st = json.loads(dolmen(tree, state, config, "status", "--json").stdout)
    if not st["interrupted"]:
        return f"point {point}: the next run did not see the interruption: {st}"
    rec = dolmen(tree, state, config, "recover", choice)
    if rec.returncode != 0:
        return f"point {point}: recover {choice} failed: {rec.stdout}{rec.stderr}"
    if snapshot(tree) != want:
        return f"point {point}: the tree after recover {choice} is not the expected one"
    return None


@pytest.fixture
def config(dolmen_dirs: Path) -> Path:
    (dolmen_dirs / "profiles" / "crashy.toml").write_text(CRASHY)
    return dolmen_dirs


@pytest.fixture
def applied_snapshot(pristine_host: Path, config: Path, tmp_path: Path) -> dict:
    """The tree after a clean, uninterrupted apply of the crash profile."""
    tree = copy_tree(pristine_host, tmp_path / "clean")
    host = TreeHost(tree)
    plan = plan_profile(host, load_profile("crashy"))
    assert len(plan.steps) == STEPS, [c.target.name for c in plan.steps]
    assert apply_plan(host, plan, tune_dir(host)).ok
    return snapshot(tree)


def _case(base: Path, pristine: Path, n: int) -> tuple[Path, Path]:
    return copy_tree(pristine, base / f"t{n}"), base / f"s{n}"


def test_kill_at_every_apply_step_then_roll_back_exactly(
    pristine_host: Path, config: Path, tmp_path: Path
) -> None:
    before = snapshot(pristine_host)

    def one(point: int) -> str | None:
        tree, state = _case(tmp_path, pristine_host, point)
        return kill_then_recover(tree, state, config, "crashy", point, "--rollback", before)

    with ThreadPoolExecutor(WORKERS) as pool:
        problems = [p for p in pool.map(one, APPLY_POINTS) if p]
    assert not problems, "\n".join(problems)


def test_kill_then_complete_gives_the_clean_apply(
    pristine_host: Path, config: Path, tmp_path: Path, applied_snapshot: dict
) -> None:
    def one(point: int) -> str | None:
        tree, state = _case(tmp_path, pristine_host, point)
        return kill_then_recover(
            tree, state, config, "crashy", point, "--complete", applied_snapshot
        )

    with ThreadPoolExecutor(WORKERS) as pool:
        problems = [p for p in pool.map(one, APPLY_POINTS[::3]) if p]
    assert not problems, "\n".join(problems)


def test_an_interrupted_apply_blocks_the_next_until_the_user_chooses(
    pristine_host: Path, config: Path, tmp_path: Path
) -> None:
    tree, state = _case(tmp_path, pristine_host, 0)
    assert dolmen(tree, state, config, "apply", "crashy", "--yes", crash="5").returncode == -9
    again = dolmen(tree, state, config, "apply", "crashy", "--yes")
    assert again.returncode == 3
    assert "was interrupted (2 of 11 steps written" in again.stderr
    assert "--rollback" in again.stderr and "--complete" in again.stderr
    plan = dolmen(tree, state, config, "plan", "crashy")
    assert plan.returncode == 0 and "warning: an apply of crashy was interrupted" in plan.stderr
    assert dolmen(tree, state, config, "rollback", "--yes").returncode == 0
    assert snapshot(tree) == snapshot(pristine_host)


def test_kill_at_every_rollback_step_then_finish_it(
    pristine_host: Path, config: Path, tmp_path: Path
) -> None:
    before = snapshot(pristine_host)

    def one(point: int) -> str | None:
        tree, state = _case(tmp_path, pristine_host, point)
        assert dolmen(tree, state, config, "apply", "crashy", "--yes").returncode == 0
        killed = dolmen(tree, state, config, "rollback", "--yes", crash=f"rollback:{point}")
        if killed.returncode != -signal.SIGKILL:
            return f"rollback point {point}: not killed: {killed.stderr}"
        refused = dolmen(tree, state, config, "recover", "--complete")
        if refused.returncode != 2 or "can only be finished" not in refused.stderr:
            return f"rollback point {point}: completing a rollback was not refused"
        rec = dolmen(tree, state, config, "recover", "--rollback")
        if rec.returncode != 0 or snapshot(tree) != before:
            return f"rollback point {point}: not restored: {rec.stdout}{rec.stderr}"
        return None

    with ThreadPoolExecutor(WORKERS) as pool:
        problems = [p for p in pool.map(one, range(0, STEPS + 1, 2)) if p]
    assert not problems, "\n".join(problems)
