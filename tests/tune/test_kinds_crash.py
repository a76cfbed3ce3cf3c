"""The new kinds under a real SIGKILL at every step of an apply (``DOLMEN_TUNE_CRASH_AT``):
the compile caches' folder and login script, a daemon.json merge, modprobe.d and
modules-load.d drop-ins and the GPU bridges' power control. The next run sees the
interruption, and ``recover --rollback`` gives back the whole tree byte for byte (modes,
folders and all), or ``recover --complete`` gives the tree a clean apply leaves."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dolmen.demo.build import write_pci
from dolmen.host.tree import TreeHost
from dolmen.tune.engine import apply_plan
from dolmen.tune.journal import tune_dir
from dolmen.tune.planner import plan_profile
from dolmen.tune.profile import load_profile
from tests.tune.test_crash import WORKERS, kill_then_recover
from tests.tune.trees import copy_tree, snapshot

KINDS = """\
[profile]
description = "crash test of the DGX OS kinds"
persist = false
[pcie_power]
gpu_bridges = "on"
[docker]
"default-shm-size" = "1G"
[caches]
folder = "auto"
[modules]
"nvidia-peermem" = "load"
"nvidia.NVreg_EnableGpuFirmware" = 1
"""
STEPS = 7  # 2 bridges, daemon.json, the cache root and its script, 2 drop-ins
BRIDGES = ["0000:15:01.0", "0000:16:00.0"]


@pytest.fixture
def base(pristine_host: Path, tmp_path: Path) -> Path:
    """The standard test host with a GPU behind two bridges, Docker and a /raid mount."""
    root = copy_tree(pristine_host, tmp_path / "base")
    for i, bdf in enumerate(BRIDGES):
        write_pci(root, {"bdf": bdf, "bridges": BRIDGES[:i], "device": "0x1", "class": "0x060400"})
        power = root / "sys/devices/pci0000:15" / "/".join(BRIDGES[: i + 1]) / "power"
        power.mkdir()
        (power / "control").write_text("auto\n")
    write_pci(
        root, {"bdf": "0000:17:00.0", "bridges": BRIDGES, "device": "0x2330", "class": "0x030200"}
    )
    (root / "etc/docker").mkdir()
    (root / "etc/docker/daemon.json").write_text('{"data-root": "/raid/docker"}\n')
    (root / "proc/self").mkdir(parents=True, exist_ok=True)
    (root / "proc/self/mounts").write_text("/dev/vda / ext4 rw 0 0\n/dev/md0 /raid xfs rw 0 0\n")
    (root / "raid").mkdir()
    return root


@pytest.fixture
def config(dolmen_dirs: Path) -> Path:
    (dolmen_dirs / "profiles" / "kinds.toml").write_text(KINDS)
    return dolmen_dirs


def test_kill_at_every_step_then_roll_back_or_complete(
    base: Path, config: Path, tmp_path: Path
) -> None:
    clean = copy_tree(base, tmp_path / "clean")
    host = TreeHost(clean)
    plan = plan_profile(host, load_profile("kinds"))
    assert len(plan.steps) == STEPS, [c.target.name for c in plan.steps]
    assert apply_plan(host, plan, tune_dir(host)).ok
    applied, before = snapshot(clean), snapshot(base)

    def one(point: int) -> str | None:
        tree, state = copy_tree(base, tmp_path / f"t{point}"), tmp_path / f"s{point}"
        if point % 2:
            return kill_then_recover(tree, state, config, "kinds", point, "--complete", applied)
        return kill_then_recover(tree, state, config, "kinds", point, "--rollback", before)

    with ThreadPoolExecutor(WORKERS) as pool:
        problems = [p for p in pool.map(one, range(2 * STEPS + 2)) if p]
    assert not problems, "\n".join(problems)
