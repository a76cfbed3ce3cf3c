"""Fixtures of the stack tests: private dolmen folders, and a private apt root.

``apt_root`` is a real apt and dpkg installation in a folder: its own sources (a
``file:`` repository of tiny packages built with dpkg-deb and indexed with
dpkg-scanpackages), lists, cache, dpkg database and logs, all under ``tmp_path``. apt reads
only ``<root>/etc/apt/apt.conf`` (through APT_CONFIG, which dolmen sets for a host at that
root), whose ``Dir`` and ``DPkg::Options`` (``--root``, ``--admindir``, ``--log``) keep
apt and dpkg inside the root; the packages have no maintainer scripts, so nothing runs.
The machine's own dpkg database is hashed before and after each test that uses it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

# name -> versions the repository offers (two of each, so apply can move and rollback back)
PACKAGES = {
    "nvidia-driver-550": ("550.54.15-0ubuntu1", "550.127.05-0ubuntu1"),
    "nvidia-fabricmanager-550": ("550.54.15-1", "550.127.05-1"),
    "libnccl2": ("2.19.3-1+cuda12.2", "2.21.5-1+cuda12.4"),
}
TOOLS = ("apt-get", "apt-mark", "apt-cache", "dpkg", "dpkg-deb", "dpkg-scanpackages")


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _build_repo(repo: Path, work: Path) -> None:
    repo.mkdir(parents=True)
    for name, versions in PACKAGES.items():
        for version in versions:
            pkg = work / f"{name}-{version}"
            (pkg / "DEBIAN").mkdir(parents=True)
            (pkg / "usr/share/doc" / name).mkdir(parents=True)
            (pkg / "usr/share/doc" / name / "VERSION").write_text(version + "\n")
            (pkg / "DEBIAN/control").write_text(
                f"Package: {name}\nVersion: {version}\nArchitecture: all\n"
                "Maintainer: dolmen tests <tests@example.invalid>\n"
                f"Description: tiny stand-in for {name}\n"
            )
            out = repo / f"{name}_{version.replace(':', '%3a')}_all.deb"
            subprocess.run(
                ["dpkg-deb", "--build", str(pkg), str(out)], check=True, capture_output=True
            )
    scan = subprocess.run(
        ["dpkg-scanpackages", "--multiversion", "."], cwd=repo, check=True, capture_output=True
    )
    (repo / "Packages").write_bytes(scan.stdout)


@pytest.fixture(scope="session")
def apt_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``file:`` repository of tiny packages (built once)."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"apt and dpkg tools needed for the private root: {', '.join(missing)} absent")
    base = tmp_path_factory.mktemp("apt-repo")
    _build_repo(base / "repo", base / "work")
    return base / "repo"


def _apt(root: Path, *args: str) -> None:
    env = {**os.environ, "APT_CONFIG": str(root / "etc/apt/apt.conf"), "LC_ALL": "C"}
    subprocess.run(["apt-get", "-q", "-y", *args], env=env, check=True, capture_output=True)


@pytest.fixture
def apt_root(tmp_path: Path, apt_repo: Path) -> Iterator[Path]:
    """A private apt/dpkg root with nvidia-driver-550 550.54.15 and libnccl2 2.19.3
    installed (not held) and the repository's lists fetched."""
    if os.geteuid() != 0:
        pytest.skip("the change engine applies to a live host as root only (require_root)")
    machine = Path("/var/lib/dpkg/status")
    before = _digest(machine)
    root = tmp_path / "root"
    for d in (
        "etc/apt/apt.conf.d",
        "etc/apt/preferences.d",
        "etc/apt/sources.list.d",
        "var/lib/dpkg/info",
        "var/lib/dpkg/updates",
        "var/lib/apt/lists/partial",
        "var/cache/apt/archives/partial",
        "var/log/apt",
    ):
        (root / d).mkdir(parents=True)
    (root / "var/lib/dpkg/status").write_text("")
    (root / "var/lib/dpkg/available").write_text("")
    (root / "etc/apt/apt.conf").write_text(
        f'Dir "{root}/";\n'
        f'Dir::State::status "{root}/var/lib/dpkg/status";\n'
        'Dir::Bin::dpkg "/usr/bin/dpkg";\n'
        f'DPkg::Options {{"--root={root}"; "--admindir={root}/var/lib/dpkg"; '
        f'"--log={root}/var/log/dpkg.log"; "--force-not-root"; "--force-script-chrootless";}};\n'
        'APT::Sandbox::User "root";\n'
    )
    (root / "etc/apt/sources.list").write_text(f"deb [trusted=yes] file:{apt_repo} ./\n")
    _apt(root, "update")
    _apt(root, "install", "nvidia-driver-550=550.54.15-0ubuntu1", "libnccl2=2.19.3-1+cuda12.2")
    yield root
    assert _digest(machine) == before, "the machine's dpkg database changed"
