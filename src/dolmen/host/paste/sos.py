"""A sosreport mapped onto the host-tree format: nearly the same layout already.

sos (sosreport/sos) copies files at their real paths (``proc/``, ``sys/``, ``etc/``)
and writes each command's output to ``sos_commands/<plugin>/<mangled command>``, the
command line with spaces turned into ``_`` (``nvidia-smi_-q``, ``lspci_-nnvv``,
``ibv_devinfo_-v``). The outputs dolmen reads are copied to ``commands/<key>`` under
the key of the command dolmen asks for (``sections.tree_argv``), and
``dolmen-snapshot.json`` marks the tree partial (an extracted sosreport folder is read in
place: ``SosFolderHost`` answers the same keys without writing in it): sos collects a
part of sysfs and only the commands its plugins run, so nothing it lacks is evidence of
absence.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from dolmen.host.base import DEFAULT_TIMEOUT
from dolmen.host.command import NOT_IN_BUNDLE, CommandResult, RunStatus, command_key
from dolmen.host.paste.sections import tree_argv
from dolmen.host.paste.tree import FORMAT, Placed, write_partial
from dolmen.host.tree import TreeHost

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


def select_outputs(root: Path) -> dict[tuple[str, ...], str]:
    """The sos output file (``sos_commands/<plugin>/<name>``) for each command dolmen reads.

    Only regular files count: a link or a folder under ``sos_commands`` is nobody's output
    (and a link could point anywhere)."""
    best: dict[tuple[str, ...], tuple[int, str]] = {}
    top = root / SOS_COMMANDS
    if top.is_symlink() or not top.is_dir():
        return {}
    for plugin in _PLUGINS:
        folder = top / plugin
        if folder.is_symlink() or not folder.is_dir():
            continue
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            argv = sos_argv(entry.name)
            if argv is None or not entry.is_file(follow_symlinks=False):
                continue
            if entry.stat(follow_symlinks=False).st_size > _MAX_OUTPUT:
                continue
            rank = _rank(entry.name, argv)
            if argv not in best or rank < best[argv][0]:
                best[argv] = (rank, f"{SOS_COMMANDS}/{plugin}/{entry.name}")
    return {argv: rel for argv, (_, rel) in sorted(best.items())}


def _source(file: Path, sections: list[str], count: int) -> dict[str, Any]:
    return {
        "file": str(file),
        "detected": f"a sosreport ({count} outputs dolmen reads)",
        "kind": "sosreport",
        "sections": sections,
    }


def map_sosreport(root: Path, archive: Path) -> dict[str, Any]:
    """Write ``commands/`` and the partial metadata into an extracted sosreport at ``root``
    (a private copy); returns the ``source`` object the metadata holds."""
    placed = Placed()
    for argv, rel in select_outputs(root).items():
        text = (root / rel).read_bytes().decode("utf-8", errors="replace")
        if text.strip() and placed.command(argv, text):
            placed.sections.append(f"{' '.join(argv)} ({rel})")
    source = _source(archive, placed.sections, len(placed.commands))
    write_partial(root, placed, source)
    return source


class SosFolderHost(TreeHost):
    """An extracted sosreport folder, read in place: dolmen writes nothing in it, so the
    command keys and the partial metadata are answered from memory."""

    kind = "sosreport"

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self._outputs = {command_key(a): rel for a, rel in select_outputs(self.root).items()}
        sections = [f"{k} ({rel})" for k, rel in self._outputs.items()]
        self.source = _source(root, sections, len(self._outputs))

    @property
    def detected(self) -> str:
        """The line validate prints: what was read, from which folder, and that it is partial."""
        return f"read {self.source['detected']} from {self.source['file']}; a partial bundle"

    @cached_property
    def meta(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "partial": True,
            "captured": {"commands": sorted(self._outputs)},
            "source": self.source,
        }

    def run(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, key: str | None = None
    ) -> CommandResult:
        args = tuple(argv)
        rel = self._outputs.get(key or command_key(args))
        if rel is None:
            return CommandResult(args, RunStatus.UNRECORDED, reason=NOT_IN_BUNDLE)
        try:
            out = self.read(rel)
        except OSError as e:
            return CommandResult(args, RunStatus.FAILED, reason=f"unreadable: {rel}: {e.strerror}")
        return CommandResult(args, RunStatus.OK, out, rc=0)

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "source": self.source}
