"""A copy of a host's ``/sys/class/infiniband`` given to ``--from``, read as a partial tree.

Such a folder holds one folder per HCA (``mlx5_0``), each with ``ports/<n>/`` (``state``,
``rate``, ``counters/``...). It has none of a host tree's top-level folders, so it was
refused as "not a host tree"; it is placed at ``sys/class/infiniband`` of a partial tree
instead, everything else "not in this bundle". Only regular files are copied (a sysfs
copy's links are left out: they point into the source machine's tree), bounded in count
and size.
"""

from __future__ import annotations

import os
from pathlib import Path

from dolmen.host.paste.tree import PasteHost, Placed

WHERE = "sys/class/infiniband"
MAX_FILES = 20_000
MAX_BYTES = 64 * 1024  # a sysfs attribute is one page at most


def looks_like(path: Path) -> bool:
    """Whether ``path`` is a /sys/class/infiniband copy: only HCA folders, each with ports/."""
    try:
        entries = list(os.scandir(path))
    except OSError:
        return False
    return bool(entries) and all(
        e.is_dir(follow_symlinks=False) and (Path(e.path) / "ports").is_dir() for e in entries
    )


def open_ib_class(path: Path) -> PasteHost:
    """The folder as the ``sys/class/infiniband`` of a partial tree."""
    placed = Placed()
    for top, dirs, files in os.walk(path):  # os.walk does not follow links into folders
        dirs.sort()
        for name in sorted(files):
            full = Path(top) / name
            if len(placed.files) >= MAX_FILES or full.is_symlink() or not full.is_file():
                continue
            with open(full, "rb") as f:
                data = f.read(MAX_BYTES + 1)
            if len(data) <= MAX_BYTES:
                placed.files[f"{WHERE}/{full.relative_to(path).as_posix()}"] = data
    hcas = sum(1 for e in os.scandir(path))
    source = {"detected": f"{WHERE} ({hcas} HCAs)", "file": str(path)}
    return PasteHost(path, placed, source)
