"""packaging/systemd/dolmen-tune-boot against a host tree through a simulated reboot: the
profile is applied, the kernel then forgets the IRQ affinity (IRQ numbers change across
boots, so dolmen does not persist it), and the script re-applies the active profile."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.packaging.common import PACKAGING, dolmen_program
from tests.tune.trees import add_nvme_irqs, build_host

SCRIPT = PACKAGING / "systemd/dolmen-tune-boot"
PROFILE = "ai-training-multinode"


def _env(tmp_path: Path, tree: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DOLMEN": str(dolmen_program(tmp_path)),
        "DOLMEN_PYTHON": sys.executable,
        "DOLMEN_TUNE_ROOT": str(tree),
        "DOLMEN_STATE_DIR": str(tmp_path / "state"),
        "DOLMEN_CONFIG_DIR": str(tmp_path / "config"),
    }


def _boot(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, list[str]]:
    root = build_host(tmp_path / "host")  # skips without ../shared/recordings
    return root, add_nvme_irqs(root, node=1)


def test_nothing_active_is_nothing_to_do(tmp_path: Path, tree: tuple[Path, list[str]]) -> None:
    done = _boot(_env(tmp_path, tree[0]))
    assert done.returncode == 0, done.stderr
    assert "no tune profile is active" in done.stdout


def test_reboot_loses_irq_affinity_and_the_script_puts_it_back(
    tmp_path: Path, tree: tuple[Path, list[str]]
) -> None:
    root, irqs = tree
    env = _env(tmp_path, root)
    dolmen = env["DOLMEN"]
    applied = subprocess.run(
        [dolmen, "tune", "apply", PROFILE, "--yes", "--root", str(root)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert applied.returncode == 0, applied.stdout + applied.stderr
    files = [root / f"proc/irq/{n}/smp_affinity_list" for n in irqs]
    assert {f.read_text() for f in files} == {"2-3\n"}  # node 1's CPUs

    done = _boot(env)  # a boot where nothing was lost
    assert done.returncode == 0 and f"{PROFILE} holds" in done.stdout, done.stderr

    for f in files:  # the reboot: every interrupt on every CPU again
        f.write_text("0-3\n")
    done = _boot(env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(irqs)} setting(s) of {PROFILE} did not survive" in done.stdout
    assert {f.read_text() for f in files} == {"2-3\n"}
    status = subprocess.run(
        [dolmen, "tune", "verify", "--root", str(root)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert status.returncode == 0, status.stdout  # in sync with the active profile again


def test_a_damaged_journal_stops_the_boot_with_dolmens_message(
    tmp_path: Path, tree: tuple[Path, list[str]]
) -> None:
    root, _ = tree
    env = _env(tmp_path, root)
    applied = subprocess.run(
        [env["DOLMEN"], "tune", "apply", PROFILE, "--yes", "--root", str(root)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert applied.returncode == 0
    [journal] = (tmp_path / "state").rglob("journals/*.jsonl")
    journal.write_text(journal.read_text() + "not a record\n")  # a whole line, not torn
    done = _boot(env)
    assert done.returncode == 2 and "tune journal damaged" in done.stderr, done.stderr
