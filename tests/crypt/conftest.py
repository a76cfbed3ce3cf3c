"""Fixtures of the crypt tests: state and config folders of their own, LUKS2 images."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.crypt.images import FAST, make_image


@pytest.fixture(scope="session")
def pristine_image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LUKS2 image with the passphrase of images.PASSPHRASE in keyslot 0, made once."""
    return make_image(tmp_path_factory.mktemp("pristine") / "luks2.img", "--type", "luks2", *FAST)


@pytest.fixture
def image(pristine_image: Path, tmp_path: Path) -> Path:
    """A private copy of the pristine image (a sparse copy: 20 MiB of holes)."""
    import shutil

    copy = tmp_path / "disk.img"
    shutil.copyfile(pristine_image, copy)
    shutil.copyfile(pristine_image.with_suffix(".key"), copy.with_suffix(".key"))
    return copy


@pytest.fixture(scope="session")
def loop_device(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A LUKS2 image attached to a real loop device (``losetup --find --show``), detached at
    the end of the session. Tests that use it are marked ``service`` (loop devices are the
    machine's: run them under the shared lock)."""
    import os
    import subprocess

    if os.geteuid() != 0 or not Path("/dev/loop-control").exists():
        pytest.skip("loop devices need root and /dev/loop-control")
    image = make_image(tmp_path_factory.mktemp("loop") / "luks2.img", "--type", "luks2", *FAST)
    found = subprocess.run(
        ["losetup", "--find", "--show", str(image)], capture_output=True, text=True
    )
    if found.returncode != 0:
        pytest.skip(f"no loop device: {found.stderr.strip()}")
    device = Path(found.stdout.strip())
    try:
        yield device
    finally:
        subprocess.run(["losetup", "-d", str(device)], check=False)
