"""Podman with a private configuration and storage under a folder of the test's, shared by
tests/containers (busybox containers) and tests/packaging (the image build).

runc, not crun (crun cannot run on these hybrid-cgroup machines); cgroupfs and a file
events log (no systemd session here); no network; the events log, temporaries and
network configuration in ``work``, so nothing of the machine's podman state changes."""

from __future__ import annotations

from pathlib import Path


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
