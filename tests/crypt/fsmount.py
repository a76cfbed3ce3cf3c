"""An ext4 filesystem with the ``encrypt`` feature, loop-mounted in a temporary folder.

``mount -o loop`` attaches a loop device with autoclear, so the unmount in ``finally``
detaches it too; ``losetup -d`` is tried as well for a mount that failed halfway.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def can_mount() -> str | None:
    """None when this test may loop-mount, else why not."""
    import os

    if os.geteuid() != 0:
        return "loop mounts need root"
    if not (shutil.which("mkfs.ext4") or Path("/usr/sbin/mkfs.ext4").exists()):
        return "mkfs.ext4 (e2fsprogs) is not installed"
    if not Path("/dev/loop-control").exists():
        return "no /dev/loop-control"
    return None


@contextlib.contextmanager
def encrypted_ext4(folder: Path, size_mb: int = 32) -> Iterator[Path]:
    """Make, mount and yield an ext4 ``-O encrypt`` mount point under ``folder``."""
    why = can_mount()
    if why:
        pytest.skip(why)
    image, point = folder / "fs.img", folder / "mnt"
    point.mkdir()
    with open(image, "wb") as f:
        f.truncate(size_mb << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-O", "encrypt", str(image)], check=True)
    mounted = subprocess.run(["mount", "-o", "loop", str(image), str(point)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot loop-mount here: {mounted.stderr.decode().strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", str(point)], check=False)
        listed = subprocess.run(["losetup", "-j", str(image)], capture_output=True, text=True)
        for line in listed.stdout.splitlines():  # left attached by a half-done mount
            subprocess.run(["losetup", "-d", line.split(":", 1)[0]], check=False)
