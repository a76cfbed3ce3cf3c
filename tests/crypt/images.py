"""LUKS images made by the real cryptsetup, for the parser's table and the enrolment tests.

Image files stand in for block devices (cryptsetup formats, dumps, adds keys and imports
tokens on a file as on a device); ``loop_device`` in conftest.py attaches one to a real loop
device for the end-to-end test. PBKDF2 at 1000 iterations keeps each keyslot operation at
milliseconds instead of Argon2id's second; one image uses Argon2id to show the KDF is read.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CRYPTSETUP = shutil.which("cryptsetup") or "/usr/sbin/cryptsetup"
FAST = ("--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000")
PASSPHRASE = b"correct horse battery staple"


def have_cryptsetup() -> bool:
    """Whether cryptsetup runs here (Debian package cryptsetup-bin)."""
    return Path(CRYPTSETUP).is_file()


needs_cryptsetup = pytest.mark.skipif(not have_cryptsetup(), reason="cryptsetup is not installed")


def cryptsetup(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run cryptsetup in batch mode; raises on failure with its stderr."""
    return subprocess.run(
        [CRYPTSETUP, "--batch-mode", *args], input=stdin, capture_output=True, check=True
    )


def make_image(path: Path, *args: str, size_mb: int = 20, passphrase: bytes = PASSPHRASE) -> Path:
    """A LUKS image of ``size_mb`` at ``path`` with ``passphrase`` in keyslot 0."""
    with open(path, "wb") as f:
        f.truncate(size_mb << 20)
    key = path.with_suffix(".key")
    key.write_bytes(passphrase)
    cryptsetup("luksFormat", *args, "--key-file", str(key), str(path))
    return path


def dump_json(path: Path) -> str:
    """``cryptsetup luksDump --dump-json-metadata`` of an image."""
    return cryptsetup("luksDump", "--dump-json-metadata", str(path)).stdout.decode()
