"""Podman with a private configuration and storage under a folder of the test's, shared by
tests/containers (busybox containers), tests/packaging (the image build) and tests/setup
(the benchmark images).

runc, not crun (crun cannot run on these hybrid-cgroup machines); cgroupfs and a file
events log (no systemd session here); no network; the events log, temporaries and
network configuration in ``work``, so nothing of the machine's podman state changes."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

# The machine's CDI folder: podman 4.3 has no spec-dir flag, so a test's private spec goes
# there for the length of the test, under a unique name, behind this lock; a test that
# reads the live host's CDI specs takes it too (it would see another test's spec).
CDI_DIR = Path("/var/run/cdi")
CDI_LOCK = Path("/tmp/dolmen-containers-cdi.lock")


@contextlib.contextmanager
def cdi_folder() -> Iterator[Path]:
    """The machine's CDI folder, held for this test alone (the lock above)."""
    CDI_LOCK.touch()
    with CDI_LOCK.open() as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield CDI_DIR


def private_config(work: Path, driver: str = "vfs") -> dict[str, str]:
    """Write ``work``/containers.conf and storage.conf; the environment that makes podman
    use them. ``vfs`` leaves no overlay mounts behind; ``overlay`` builds images faster."""
    (work / "containers.conf").write_text(
        "[containers]\n"
        'default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]\n'
        'netns = "none"\n'
        "[engine]\n"
        'runtime = "runc"\n'
        'cgroup_manager = "cgroupfs"\n'
        'events_logger = "file"\n'
        f'events_logfile_path = "{work}/events.log"\n'
        f'tmp_dir = "{work}/tmp"\n'
        "[network]\n"
        f'network_config_dir = "{work}/networks"\n'
    )
    (work / "storage.conf").write_text(
        f'[storage]\ndriver = "{driver}"\nrunroot = "{work}/runroot"\ngraphroot = "{work}/root"\n'
    )
    return {
        "CONTAINERS_CONF": str(work / "containers.conf"),
        "CONTAINERS_STORAGE_CONF": str(work / "storage.conf"),
    }


class Podman:
    """podman with its configuration, storage and temporaries under ``work``, each call in
    a private mount namespace (see ``__call__``): for what writes images (import, build)."""

    def __init__(self, work: Path, driver: str = "vfs") -> None:
        self.work = work
        self.env = {
            **os.environ,
            **private_config(work, driver=driver),
            "TMPDIR": str(work / "tmp"),
        }
        (work / "tmp").mkdir(exist_ok=True)

    def __call__(self, *args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
        """podman in a private mount namespace whose /var/lib/containers is a folder of
        ours: podman writes its blob-info cache there whatever storage.conf says (podman
        issue 15398), and the machine's copy must not change."""
        podman = shutil.which("podman")
        assert podman is not None
        (self.work / "var-lib-containers").mkdir(exist_ok=True)
        if Path("/var/lib/containers").is_dir():
            target, source = "/var/lib/containers", str(self.work / "var-lib-containers")
            cover = f"mount --bind {source} {target}"
        else:  # no mount point to cover: a tmpfs over /var/lib, which podman needs no more
            cover = "mount -t tmpfs -o size=16m tmpfs /var/lib"
        return subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c",
             f'{cover} && exec "$0" "$@"', podman, *args],
            env=self.env, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``podman run --rm --network none ARGS``."""
        return self("run", "--rm", "--network", "none", *args)
