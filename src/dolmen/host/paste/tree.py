"""A pasted file opened as a *partial* host tree in a private temporary folder.

The detected content is written where a snapshot would have put it (DESIGN.md "Host"):
``commands/<command_key(argv)>`` for a command's output, ``commands/dmesg`` for a
kernel log, a bug report's copies of ``/proc`` files at their paths; then
``dolmen-snapshot.json`` says ``"partial": true`` and lists the commands it holds, so
everything else reads "not in this bundle" (``TreeHost.absent``, ``RunStatus.UNRECORDED``)
and never "absent from the host". ``close()`` removes the folder, as ``ArchiveHost`` does.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dolmen import __version__
from dolmen.host.command import command_key
from dolmen.host.tree import COMMANDS_DIR, SNAPSHOT_META, TreeHost

FORMAT = "dolmen.snapshot/1"  # dolmen.host.bundle.FORMAT: the same contract, read by TreeHost


class Placed:
    """What goes into a partial tree: command outputs by argv, files by host path."""

    def __init__(self) -> None:
        self.commands: dict[tuple[str, ...], tuple[str, int]] = {}  # argv -> (stdout, rc)
        self.files: dict[str, str | bytes] = {}  # bytes: a binary file (the linker cache)
        self.sections: list[str] = []  # what the input held, in words, for `source`
        self._rank: dict[tuple[str, ...], int] = {}

    def command(self, argv: Sequence[str], text: str, rc: int = 0, rank: int = 0) -> bool:
        """Place one output. Of two for the same key the lower ``rank`` wins (the exact
        command before a variant: ``-q`` before ``-q -d ECC``), then the first (a capture's
        idle run before its load run); False when this one was not placed."""
        key = tuple(argv)
        if key in self.commands and rank >= self._rank[key]:
            return False
        self.commands[key] = (text, rc)
        self._rank[key] = rank
        return True


class PasteHost(TreeHost):
    """One pasted file (or a bug report's sections) as a partial host tree."""

    kind = "paste"

    def __init__(self, origin: Path, placed: Placed, source: Mapping[str, Any]) -> None:
        self.origin = origin
        self.source = dict(source)
        self._tmp = Path(tempfile.mkdtemp(prefix="dolmen-paste-"))
        try:
            write_partial(self._tmp, placed, self.source, hostname=origin.name)
            super().__init__(self._tmp)
        except BaseException:
            shutil.rmtree(self._tmp, ignore_errors=True)
            raise

    @property
    def detected(self) -> str:
        """The line validate prints: what was read, from which file, and that it is partial."""
        return detected_line(self.source)

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "file": str(self.origin), "source": self.source}

    def close(self) -> None:
        shutil.rmtree(self._tmp, ignore_errors=True)


def detected_line(source: Mapping[str, Any]) -> str:
    """``read nvidia-smi -q -x (8 GPUs) from FILE; a partial bundle``."""
    return f"read {source.get('detected')} from {source.get('file')}; a partial bundle"


def write_partial(
    root: Path, placed: Placed, source: Mapping[str, Any], *, hostname: str | None = None
) -> None:
    """Write ``placed`` under ``root`` and the partial snapshot metadata beside it."""
    folder = root / COMMANDS_DIR
    folder.mkdir(exist_ok=True)
    keys = []
    for argv, (text, rc) in placed.commands.items():
        key = command_key(argv)
        keys.append(key)
        (folder / key).write_text(text, encoding="utf-8")
        if rc:
            (folder / f"{key}.rc").write_text(f"{rc}\n")
    for rel, content in placed.files.items():
        target = root / rel
        if not target.resolve().is_relative_to(root.resolve()):
            continue  # a name from the input: never written outside the tree
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    meta: dict[str, Any] = {
        "format": FORMAT,
        "partial": True,
        "dolmen_version": __version__,
        "captured": {"commands": sorted(keys), "files": sorted(placed.files)},
        "source": dict(source),
    }
    if hostname:
        meta["hostname"] = hostname
    (root / SNAPSHOT_META).write_text(json.dumps(meta, indent=2) + "\n")
