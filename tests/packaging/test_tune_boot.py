"""packaging/systemd/dolmen-tune-boot.service against a host tree through a simulated
reboot: its ExecStart, as the unit writes it (with ``--root`` added, the test's host), run
as a program: the profile is applied, the kernel then forgets the IRQ affinity (IRQ numbers
change across boots, so dolmen does not persist it) and a kernel value, and the unit's
``dolmen tune reapply --yes`` puts back those and nothing else."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.packaging.common import PACKAGING, dolmen_program
from tests.packaging.units import load_unit, one
from tests.tune.trees import add_nvme_irqs, build_host

UNIT = PACKAGING / "systemd/dolmen-tune-boot.service"
PROFILE = "ai-training-multinode"


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DOLMEN_STATE_DIR": str(tmp_path / "state"),
        "DOLMEN_CONFIG_DIR": str(tmp_path / "config"),
    }


def _boot(tmp_path: Path, root: Path) -> subprocess.CompletedProcess[str]:
    """The unit's ExecStart with this checkout's dolmen in place of /opt/dolmen/bin/dolmen."""
    prog, *args = shlex.split(one(load_unit(UNIT), "Service", "ExecStart"))
    assert prog == "/opt/dolmen/bin/dolmen"
    argv = [str(dolmen_program(tmp_path)), *args, "--root", str(root)]
    return subprocess.run(argv, env=_env(tmp_path), capture_output=True, text=True, timeout=120)


def _dolmen(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "dolmen.cli.main", *args]
    env = {**_env(tmp_path), "PYTHONPATH": str(PACKAGING.parent / "src")}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, list[str]]:
    root = build_host(tmp_path / "host")  # skips without ../shared/recordings
    return root, add_nvme_irqs(root, node=1)


def test_nothing_active_is_nothing_to_do(tmp_path: Path, tree: tuple[Path, list[str]]) -> None:
    done = _boot(tmp_path, tree[0])
    assert done.returncode == 0, done.stderr
    assert "no tune profile is active" in done.stdout


def test_reboot_loses_irq_affinity_and_the_unit_puts_it_back(
    tmp_path: Path, tree: tuple[Path, list[str]]
) -> None:
    root, irqs = tree
    applied = _dolmen(tmp_path, "tune", "apply", PROFILE, "--yes", "--root", str(root))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    files = [root / f"proc/irq/{n}/smp_affinity_list" for n in irqs]
    assert {f.read_text() for f in files} == {"2-3\n"}  # node 1's CPUs

    done = _boot(tmp_path, root)  # a boot where nothing was lost
    assert done.returncode == 0 and f"{PROFILE} holds" in done.stdout, done.stderr

    for f in files:  # the reboot: every interrupt on every CPU again
        f.write_text("0-3\n")
    done = _boot(tmp_path, root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"re-applied {len(irqs)} of {len(irqs)} settings of {PROFILE}" in done.stdout
    assert {f.read_text() for f in files} == {"2-3\n"}
    status = _dolmen(tmp_path, "tune", "verify", "--root", str(root))
    assert status.returncode == 0, status.stdout  # in sync with the active profile again


def test_a_damaged_journal_stops_the_boot_with_dolmens_message(
    tmp_path: Path, tree: tuple[Path, list[str]]
) -> None:
    root, _ = tree
    applied = _dolmen(tmp_path, "tune", "apply", PROFILE, "--yes", "--root", str(root))
    assert applied.returncode == 0
    [journal] = (tmp_path / "state").rglob("journals/*.jsonl")
    journal.write_text(journal.read_text() + "not a record\n")  # a whole line, not torn
    done = _boot(tmp_path, root)
    assert done.returncode == 2 and "tune journal damaged" in done.stderr, done.stderr
