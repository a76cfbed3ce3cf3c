"""Issue 9 cases 4, 5, 11 and 14 for tune: a kill inside an atomic write, SIGINT/SIGTERM during
apply, a full or read-only state disk, archive copies left in /tmp, conflicting flags.

The state-disk tests mount a small tmpfs in a private mount namespace (``unshare --mount``,
root only): it disappears with the namespace, so there is nothing to unmount afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from dolmen.host.tree import TreeHost
from dolmen.tune.planner import plan_profile
from dolmen.tune.profile import load_profile
from tests.tune.netns import SRC
from tests.tune.test_crash import CRASHY, dolmen
from tests.tune.trees import copy_tree, snapshot


@pytest.fixture
def config(dolmen_dirs: Path) -> Path:
    (dolmen_dirs / "profiles" / "crashy.toml").write_text(CRASHY)
    return dolmen_dirs


def _grub_step(tree: Path) -> tuple[int, str]:
    """(k, path) of the step that writes the GRUB drop-in, in a folder apply creates."""
    plan = plan_profile(TreeHost(tree), load_profile("crashy"))
    for k, c in enumerate(plan.steps):
        if "grub.d/" in c.target.path:
            return k, c.target.path
    raise AssertionError("no GRUB drop-in step")


def _killed_inside_the_atomic_write(tree: Path, state: Path, config: Path) -> Path:
    """Kill the apply just after the drop-in's original is journaled, then leave what a
    kill inside ``atomic_write`` leaves: the folder it made and its temporary."""
    k, path = _grub_step(tree)
    assert (
        dolmen(tree, state, config, "apply", "crashy", "--yes", crash=str(1 + 2 * k)).returncode
        == -9
    )
    target = tree / path
    target.parent.mkdir(parents=True)
    (target.parent / f".{target.name}.dolmen-tmp-4242").write_text("half")
    return target.parent


def test_a_kill_inside_an_atomic_write_then_rollback_leaves_no_folder(
    config: Path, pristine_host: Path, tmp_path: Path
) -> None:
    tree, state = copy_tree(pristine_host, tmp_path / "t"), tmp_path / "s"
    folder = _killed_inside_the_atomic_write(tree, state, config)
    rec = dolmen(tree, state, config, "recover", "--rollback")
    assert rec.returncode == 0, rec.stdout + rec.stderr
    assert not folder.exists()
    assert snapshot(tree) == snapshot(pristine_host)


def test_a_kill_inside_an_atomic_write_then_complete_then_rollback(
    config: Path, pristine_host: Path, tmp_path: Path
) -> None:
    tree, state = copy_tree(pristine_host, tmp_path / "t"), tmp_path / "s"
    folder = _killed_inside_the_atomic_write(tree, state, config)
    done = dolmen(tree, state, config, "recover", "--complete")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not list(folder.glob(".*dolmen-tmp*"))  # a clean apply leaves no temporary
    back = dolmen(tree, state, config, "rollback", "--yes")
    assert back.returncode == 0, back.stdout + back.stderr
    assert snapshot(tree) == snapshot(pristine_host)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("point", [0, 5, 14, 23])
def test_sigint_or_sigterm_during_apply_rolls_back_on_the_spot(
    sig: str, point: int, config: Path, pristine_host: Path, tmp_path: Path
) -> None:
    tree, state = copy_tree(pristine_host, tmp_path / "t"), tmp_path / "s"
    got = dolmen(tree, state, config, "apply", "crashy", "--yes", crash=f"{point}:{sig}")
    assert got.returncode == 130, got.stdout + got.stderr
    assert f"interrupted by {sig}" in got.stdout
    assert snapshot(tree) == snapshot(pristine_host)
    st = json.loads(dolmen(tree, state, config, "status", "--json").stdout)
    assert st["state"] == "none" and not st["interrupted"], st


def test_a_signal_during_rollback_waits_for_it_to_finish(
    config: Path, pristine_host: Path, tmp_path: Path
) -> None:
    tree, state = copy_tree(pristine_host, tmp_path / "t"), tmp_path / "s"
    assert dolmen(tree, state, config, "apply", "crashy", "--yes").returncode == 0
    got = dolmen(tree, state, config, "rollback", "--yes", crash="rollback:3:SIGTERM")
    assert got.returncode == 0, got.stdout + got.stderr
    assert snapshot(tree) == snapshot(pristine_host)


# --- the state disk: full, read-only -----------------------------------------------------------
def _in_namespace(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) to mount a tmpfs in a private namespace")
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare --mount refused: {probe.stderr.decode().strip()}")
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-euc", script],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )


def _dolmen_line(tree: Path, config: Path, *args: str) -> str:
    env = f'PYTHONPATH={SRC} DOLMEN_STATE_DIR="$S" DOLMEN_CONFIG_DIR={config} COLUMNS=200'
    cmd = " ".join([sys.executable, "-m", "dolmen.cli.main", "tune", *args, "--root", str(tree)])
    return f"{env} {cmd}"


def test_a_full_state_disk_during_apply_exits_4_and_rolls_back(
    config: Path, pristine_host: Path, tmp_path: Path
) -> None:
    """One apply per amount of free space, from none to more than the apply needs: every
    one exits 0 or 4 (never 70), and every 4 leaves the tree exactly as it was."""
    frees = list(range(0, 80, 4))
    trees = [copy_tree(pristine_host, tmp_path / f"t{k}") for k in frees]
    runs = []
    for k, tree in zip(frees, trees, strict=True):
        runs.append(
            f"""
S={tmp_path}/state{k}; mkdir -p $S $S.out
mount -t tmpfs -o size=256k tmpfs $S
avail=$(df -k --output=avail $S | tail -1)
[ $avail -gt {k} ] && head -c $(( (avail - {k}) * 1024 )) /dev/zero > $S/fill 2>/dev/null || true
set +e; {_dolmen_line(tree, config, "apply", "crashy", "--yes")} >$S.out/out 2>$S.out/err
echo $? > $S.out/rc; set -e
cp -r $S/tune $S.out/ 2>/dev/null || true
umount $S
"""
        )
    got = _in_namespace("".join(runs), tmp_path)
    assert got.returncode == 0, got.stderr
    before = snapshot(pristine_host)
    codes: dict[int, int] = {}
    mid_apply = 0
    for k, tree in zip(frees, trees, strict=True):
        out = tmp_path / f"state{k}.out"
        rc = int((out / "rc").read_text())
        err = (out / "err").read_text()
        codes[k] = rc
        assert rc in (0, 4), (k, rc, err, (out / "out").read_text())
        if rc == 4:
            assert "Traceback" not in err and err.startswith("dolmen: error:"), err
            assert snapshot(tree) == before, f"{k} KiB free: the tree is not restored"
            saves = [p.read_text().count('"type": "save"') for p in out.glob("tune/**/*.jsonl")]
            mid_apply += any(saves)
    assert 4 in codes.values() and 0 in codes.values(), codes
    assert mid_apply, f"no run ran out of space halfway through the apply: {codes}"


def test_a_read_only_state_folder_under_apply_is_exit_4(
    config: Path, pristine_host: Path, tmp_path: Path
) -> None:
    tree = copy_tree(pristine_host, tmp_path / "t")
    script = f"""
S={tmp_path}/state; mkdir -p $S
mount -t tmpfs -o size=1m tmpfs $S; mount -o remount,ro $S
set +e; {_dolmen_line(tree, config, "apply", "crashy", "--yes")} >{tmp_path}/out 2>{tmp_path}/err
echo $? > {tmp_path}/rc
"""
    assert _in_namespace(script, tmp_path).returncode == 0
    err = (tmp_path / "err").read_text()
    assert (tmp_path / "rc").read_text().strip() == "4", err
    assert "read-only" in err.lower() and "hint:" in err, err
    assert snapshot(tree) == snapshot(pristine_host)


# --- case 14 -------------------------------------------------------------------------------------
def test_tune_on_a_snapshot_archive_leaves_no_copy_in_tmp(
    config: Path, pristine_host: Path, tmp_path: Path
) -> None:
    archive = tmp_path / "bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(pristine_host / "etc", arcname="etc")
        tar.add(pristine_host / "proc/sys/vm", arcname="proc/sys/vm")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(SRC)}
    env |= {"DOLMEN_STATE_DIR": str(tmp_path / "s"), "DOLMEN_CONFIG_DIR": str(config)}
    for args in (["status"], ["plan", "crashy"], ["verify", "crashy"], ["apply", "crashy"]):
        cmd = [sys.executable, "-m", "dolmen.cli.main", "tune", *args, "--root", str(archive)]
        subprocess.run(cmd, env=env, capture_output=True, timeout=60)
    assert not list(tmp.iterdir())


def test_recover_refuses_rollback_and_complete_together(
    config: Path, pristine_host: Path, tmp_path: Path
) -> None:
    tree, state = copy_tree(pristine_host, tmp_path / "t"), tmp_path / "s"
    assert dolmen(tree, state, config, "apply", "crashy", "--yes", crash="5").returncode == -9
    got = dolmen(tree, state, config, "recover", "--rollback", "--complete")
    assert got.returncode == 2 and "contradict" in got.stderr, got.stderr
    st = json.loads(dolmen(tree, state, config, "status", "--json").stdout)
    assert st["interrupted"]  # nothing was chosen for the user
