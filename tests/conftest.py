"""Shared test helpers: the real recordings in ../shared, host trees, building trees."""

from __future__ import annotations

import atexit
import errno
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from dolmen.host.command import command_key

# The real key services (OpenBao dev server, SoftHSM2 token) as session fixtures for
# every folder: tests/keys, tests/crypt and tests/integrity share one of each.
pytest_plugins = ("tests.keys.services",)

# Safety net: no test may touch the real /etc/dolmen or /var/lib/dolmen. Every process the
# tests start inherits these; a test that needs its own folders sets them itself.
_SANDBOX = Path(tempfile.mkdtemp(prefix="dolmen-tests-"))
os.environ["DOLMEN_STATE_DIR"] = str(_SANDBOX / "state")
os.environ["DOLMEN_CONFIG_DIR"] = str(_SANDBOX / "config")
atexit.register(shutil.rmtree, _SANDBOX, True)
# Output widths do not depend on who runs the tests: pytest-xdist's workers get
# COLUMNS=80 and LINES=24 (execnet), a terminal its own; the CLI reads COLUMNS.
for _var in ("COLUMNS", "LINES"):
    os.environ.pop(_var, None)


@pytest.fixture
def dolmen_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """DOLMEN_STATE_DIR and DOLMEN_CONFIG_DIR (made) under tmp_path, so that no test touches
    the real ones; returns the state folder (audit log, journals, key rings)."""
    state, config = tmp_path / "state", tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("DOLMEN_STATE_DIR", str(state))
    monkeypatch.setenv("DOLMEN_CONFIG_DIR", str(config))
    monkeypatch.delenv("DOLMEN_TUNE_CRASH_AT", raising=False)
    return state


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 64 KiB tmpfs (root only; skipped where mounting is refused), unmounted after:
    a disk that fills for real (``fill_disk``), not a mocked ENOSPC."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill_disk(path: Path) -> None:
    """Write zeros to ``path`` until its file system is full (ENOSPC)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as e:
        assert e.errno == errno.ENOSPC
    finally:
        os.close(fd)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite the golden expected.json of each scenario (review the diff)",
    )


REPO = Path(__file__).resolve().parents[1]
RECORDINGS = REPO.parent / "shared" / "recordings"
HOSTS = REPO / "tests" / "hosts"


def recording(rel: str) -> Path:
    """A file or folder of ../shared/recordings; skips the test when the folder is absent."""
    if not RECORDINGS.is_dir():
        pytest.skip(f"real recordings not available: {RECORDINGS} is absent (see README, Tests)")
    path = RECORDINGS / rel
    if not path.exists():
        pytest.skip(f"recording {rel} is absent from {RECORDINGS}")
    return path


def recordings_in(folder: str, pattern: str = "*") -> list[Path]:
    """Every recording in a folder (for parametrize); [] when ../shared is absent."""
    base = RECORDINGS / folder
    return sorted(p for p in base.glob(pattern) if p.is_file()) if base.is_dir() else []


def make_tree(
    root: Path,
    files: Mapping[str, str | bytes] | None = None,
    commands: Mapping[str, str | tuple[str, int] | tuple[str, int, str]] | None = None,
) -> Path:
    """Write a host tree: ``files`` by path, ``commands`` by argv string -> stdout[, rc[, err]]."""
    for rel, content in (files or {}).items():
        p = root / rel.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)
    for argv, spec in (commands or {}).items():
        out, rc, err = (spec, 0, "") if isinstance(spec, str) else (*spec, "")[:3]
        key = command_key(argv.split(" ")) if " " in argv else argv
        d = root / "commands"
        d.mkdir(parents=True, exist_ok=True)
        (d / key).write_text(str(out))
        if rc:
            (d / f"{key}.rc").write_text(f"{rc}\n")
        if err:
            (d / f"{key}.err").write_text(str(err))
    root.mkdir(parents=True, exist_ok=True)
    return root
