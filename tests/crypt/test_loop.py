"""The whole cycle on a real block device: a LUKS2 image on a loop device (what posture reads
and enrol changes on a node), up to ``open --test-passphrase`` (dm-crypt cannot activate
here)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dolmen.crypt.device import read_luks2
from dolmen.host import open_host
from tests.crypt.images import PASSPHRASE, needs_cryptsetup
from tests.crypt.test_enrol import run

pytestmark = [needs_cryptsetup, pytest.mark.service]


def test_enrol_and_unlock_a_block_device(
    loop_device: Path, dolmen_dirs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "pass"
    key.write_bytes(PASSPHRASE)
    h = read_luks2(open_host(), str(loop_device))  # the header, read from the device itself
    assert h.version == 2 and h.keyslots[0].slot == 0
    rc, _, err = run(
        capsys, "enrol", str(loop_device), "--provider", "file", "--key-file", str(key), "--yes"
    )
    assert rc == 0, err
    assert [t.type for t in read_luks2(open_host(), str(loop_device)).tokens] == ["dolmen"]
    rc, out, err = run(capsys, "unlock", str(loop_device), "--yes")
    assert rc == 0 and "crypt.unlock: done" in out, err
    backups = list((dolmen_dirs / "crypt" / h.uuid).iterdir())
    assert len(backups) == 1 and backups[0].stat().st_mode & 0o777 == 0o400
    assert shutil.which("cryptsetup")
