"""Atomic checkpoints and finding the newest complete one, whatever a crash left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dolmen.jobs import checkpoint


def test_save_and_find_the_latest(tmp_path: Path) -> None:
    assert checkpoint.latest(tmp_path / "absent") is None
    for step in (1, 5, 3):
        checkpoint.save(tmp_path, step, f"state {step}".encode())
    ck = checkpoint.latest(tmp_path)
    assert ck is not None and ck.step == 5 and ck.read() == b"state 5"
    manifest = json.loads((ck.path / "COMPLETE").read_text())
    assert manifest["format"] == "dolmen.checkpoint/1" and manifest["step"] == 5
    assert manifest["files"]["state"]["size"] == len(b"state 5")


def test_a_writer_and_several_files(tmp_path: Path) -> None:
    ck = checkpoint.save(
        tmp_path,
        7,
        {"model.bin": b"m" * 1000, "opt.json": lambda p: p.write_text('{"lr": 0.1}')},
    )
    found = checkpoint.latest(tmp_path)
    assert found == ck
    assert found.read("opt.json") == b'{"lr": 0.1}'
    with pytest.raises(KeyError, match=r"model\.bin"):
        found.file("absent")


def test_partial_and_corrupt_checkpoints_are_skipped(tmp_path: Path) -> None:
    checkpoint.save(tmp_path, 1, b"good")
    # a crash after the rename, before COMPLETE
    (tmp_path / "step-000000000009").mkdir()
    (tmp_path / "step-000000000009" / "state").write_bytes(b"half")
    # a crash while writing the payload
    (tmp_path / ".partial-000000000010-99999999-0").mkdir()
    # a file cut short underneath us: the size says so
    cut = checkpoint.save(tmp_path, 9 - 1, b"original")
    (cut.path / "state").write_bytes(b"orig")
    # a manifest that is not JSON
    (tmp_path / "step-000000000007").mkdir()
    (tmp_path / "step-000000000007" / "COMPLETE").write_bytes(b"\x00\xff")
    ck = checkpoint.latest(tmp_path)
    assert ck is not None and ck.step == 1 and ck.read() == b"good"
    assert [c.step for c in checkpoint.complete(tmp_path)] == [8, 1]
    assert checkpoint.latest(tmp_path, verify=False).step == 8  # type: ignore[union-attr]
    assert checkpoint.latest(tmp_path, verify="none").step == 8  # type: ignore[union-attr]


def test_same_size_corruption_needs_the_hash(tmp_path: Path) -> None:
    """The default lookup stats the files; only ``verify="hash"`` reads their bytes."""
    checkpoint.save(tmp_path, 1, b"good")
    bad = checkpoint.save(tmp_path, 2, b"original")
    (bad.path / "state").write_bytes(b"tampered")  # same length
    assert checkpoint.latest(tmp_path).step == 2  # type: ignore[union-attr]
    assert checkpoint.latest(tmp_path, verify="hash").step == 1  # type: ignore[union-attr]
    assert checkpoint.latest(tmp_path, verify=True).step == 1  # type: ignore[union-attr]
    assert [c.step for c in checkpoint.complete(tmp_path, verify="hash")] == [1]
    with pytest.raises(ValueError, match="verify must be one of none, size, hash"):
        checkpoint.latest(tmp_path, verify="sha")  # type: ignore[arg-type]


def test_keep_prunes_old_and_crashed_ones(tmp_path: Path) -> None:
    (tmp_path / ".partial-000000000002-99999999-0").mkdir(parents=True)
    for step in range(1, 6):
        checkpoint.save(tmp_path, step, b"x", keep=2)
    assert sorted(os.listdir(tmp_path)) == ["step-000000000004", "step-000000000005"]


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="step"):
        checkpoint.save(tmp_path, -1, b"")
    for name in ("COMPLETE", "a/b", ".hidden", ""):
        with pytest.raises(ValueError, match="not allowed"):
            checkpoint.save(tmp_path, 1, {name: b""})
    with pytest.raises(ValueError, match="did not create"):
        checkpoint.save(tmp_path, 1, lambda p: None)


def test_a_writer_killed_mid_save_leaves_the_last_checkpoint(tmp_path: Path) -> None:
    """A real process dies inside its writer; the checkpoint before it stays the latest."""
    checkpoint.save(tmp_path, 1, b"before")
    code = (
        "import os, signal, sys\n"
        "from dolmen.jobs import checkpoint\n"
        "def die(path):\n"
        "    path.write_bytes(b'partial')\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "checkpoint.save(sys.argv[1], 2, die)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], timeout=30)
    assert done.returncode == -9
    ck = checkpoint.latest(tmp_path)
    assert ck is not None and ck.step == 1 and ck.read() == b"before"
    assert any(n.startswith(".partial-000000000002") for n in os.listdir(tmp_path))
    checkpoint.prune(tmp_path, keep=5)  # the writer is dead: its leftovers go
    assert sorted(os.listdir(tmp_path)) == ["step-000000000001"]
