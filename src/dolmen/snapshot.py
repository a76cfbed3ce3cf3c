"""``dolmen snapshot``: capture the live host as a host tree (the support bundle).

What is captured is exactly what dolmen reads: the facts are collected through
a ``RecordingHost`` that notes every file, folder, link and command, and
``dolmen.host.bundle`` then writes those into the tree, secrets left out. This
module sits above ``facts`` (it drives them); the host layer only records and
writes.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dolmen.facts import FactStore
from dolmen.host.bundle import write_bundle
from dolmen.host.command import command_key
from dolmen.host.recording import RecordingHost

# Commands captured whatever the collectors ran (their keys are part of the tree contract).
EXTRA_COMMANDS: tuple[tuple[tuple[str, ...], str | None], ...] = (
    (("nvidia-smi", "-q", "-x"), None),
    (("nvidia-smi", "nvlink", "-s"), None),
    (("nvidia-smi", "topo", "-m"), None),
    (("ibstat",), None),
    (("uname", "-a"), None),
    (("rdma", "system", "show"), None),  # security.rdma.netns_exclusive runs it, no collector
)
# Folders captured whole whatever the collectors read: what a support engineer asks for
# though no check judges it (an HCA port's data counters, its driver's own counters:
# out_of_buffer, rnr_nak...), and every crash record an earlier boot left (the checks read
# pstore's dmesg-* records; console-*, pmsg-* and systemd-pstore's archive come along).
EXTRA_FOLDERS = (
    "sys/class/infiniband/*/ports/*/counters",
    "sys/class/infiniband/*/ports/*/hw_counters",
    "sys/class/infiniband/*/ports/*/pkeys",  # net ib verify: the tables the SM wrote
    "sys/fs/pstore",
    "var/lib/systemd/pstore/*",
)


def capture(
    out: Path, *, as_tree: bool = False, subsystems: Iterable[str] | None = None
) -> dict[str, Any]:
    """Capture the live host into ``out``: a ``.tar.gz``, or a new tree inside folder ``out``.

    Returns the snapshot's metadata. The output appears atomically: nothing is
    left at ``out`` if capture fails, and nothing is written anywhere else but a
    private temporary folder.
    """
    started = time.perf_counter()
    host = RecordingHost()
    facts = FactStore(host).collect(subsystems)
    for argv, key in EXTRA_COMMANDS:
        if (key or command_key(argv)) not in host.commands:
            host.run(argv, key=key)
    for pattern in EXTRA_FOLDERS:
        _read_folders(host, pattern)
    collected = [name for name, value in facts.items() if not isinstance(value, Exception)]
    return write_bundle(host, out, as_tree=as_tree, facts=collected, started=started)


def _read_folders(host: RecordingHost, pattern: str) -> None:
    """Read (so record) every file of each folder ``pattern`` names; ``*`` is one name."""
    folders = [""]
    for part in pattern.split("/"):
        if part == "*":
            folders = [f"{f}/{name}".lstrip("/") for f in folders for name in host.listdir(f)]
        else:
            folders = [f"{f}/{part}".lstrip("/") for f in folders]
    for folder in folders:
        for name in host.listdir(folder):
            try:
                host.read_bytes(f"{folder}/{name}")
            except OSError:  # unreadable (a counter the driver refuses): not captured
                continue
