"""A sosreport mapped onto the host-tree format: nearly the same layout already.

sos (sosreport/sos) copies files at their real paths (``proc/``, ``sys/``, ``etc/``)
and writes each command's output to ``sos_commands/<plugin>/<mangled command>``, the
command line with spaces turned into ``_`` (``nvidia-smi_-q``, ``lspci_-nnvv``,
``ibv_devinfo_-v``). The outputs dolmen reads are copied to ``commands/<key>`` under
the key of the command dolmen asks for (``sections.tree_argv``), and
``dolmen-snapshot.json`` marks the tree partial: sos collects a part of sysfs and only
the commands its plugins run, so nothing it lacks is evidence of absence.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dolmen.host.paste.sections import tree_argv
from dolmen.host.paste.tree import Placed, write_partial

SOS_COMMANDS = "sos_commands"
# Plugin folders that hold commands dolmen reads (the others are not looked at).
_PLUGINS = ("nvidia", "kernel", "pci", "infiniband", "logs", "dcgm")
_MAX_OUTPUT = 64 << 20


def sos_argv(name: str) -> tuple[str, ...] | None:
    """The command dolmen reads that a sos output file name stands for, or None."""
    if name.startswith("ibv_devinfo"):
        line = "ibv_devinfo" + name.removeprefix("ibv_devinfo").replace("_", " ")
    else:
        line = name.replace("_", " ")
    return tree_argv(line)


def _rank(name: str, argv: tuple[str, ...]) -> int:
    """Lower is better: the exact spelling of the command dolmen runs, then shorter names
    (``nvidia-smi_-q`` before ``nvidia-smi_-q_-d_ECC``: the whole text before a section)."""
    exact = name.replace("_", " ") == " ".join(argv)
    return (0 if exact else 1) * 1000 + len(name)


def map_sosreport(root: Path, archive: Path) -> dict[str, Any]:
    """Write ``commands/`` and the partial metadata into an extracted sosreport at ``root``;
    returns the ``source`` object the metadata holds."""
    best: dict[tuple[str, ...], tuple[int, Path, str]] = {}
    for plugin in _PLUGINS:
        folder = root / SOS_COMMANDS / plugin
        if not folder.is_dir() or folder.is_symlink():
            continue
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if not entry.is_file(follow_symlinks=False):
                continue  # links and folders from an archive are not outputs
            argv = sos_argv(entry.name)
            if argv is None:
                continue
            rank = _rank(entry.name, argv)
            if argv not in best or rank < best[argv][0]:
                best[argv] = (rank, Path(entry.path), f"{plugin}/{entry.name}")
    placed = Placed()
    for argv, (_, path, shown) in sorted(best.items()):
        if path.stat().st_size > _MAX_OUTPUT:
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        if text.strip() and placed.command(argv, text):
            placed.sections.append(f"{' '.join(argv)} (sos_commands/{shown})")
    source: dict[str, Any] = {
        "file": str(archive),
        "detected": f"a sosreport ({len(placed.commands)} outputs dolmen reads)",
        "kind": "sosreport",
        "sections": placed.sections,
    }
    write_partial(root, placed, source)
    return source
