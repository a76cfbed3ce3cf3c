"""``RecordingHost``: a live host that notes every file, folder, link and command it is asked
for, so a snapshot captures exactly what dolmen read."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dolmen.host.base import DEFAULT_TIMEOUT
from dolmen.host.command import CommandResult, command_key
from dolmen.host.live import LiveHost

# How much of a recorded path the snapshot keeps, weakest first: a link read with
# readlink keeps only the link; a path tested for existence keeps its type (an empty
# placeholder file); a listed folder keeps its entries' names and types; a read file
# keeps its bytes. Library links checked for breakage so do not drag in 100 MB targets.
_STRENGTH = {"link": 0, "exists": 1, "list": 2, "read": 3}


class RecordingHost(LiveHost):
    """A live host that notes what is read and run, for the snapshot to capture."""

    def __init__(self, root: Path = Path("/")) -> None:
        super().__init__(root)
        self.paths: dict[str, str] = {}
        self.commands: dict[str, CommandResult] = {}

    def _note(self, rel: str, how: str) -> None:
        rel = rel.strip("/")
        if _STRENGTH[how] > _STRENGTH.get(self.paths.get(rel, "link"), -1) or rel not in self.paths:
            self.paths[rel] = how

    def read_bytes(self, rel: str) -> bytes:
        self._note(rel, "read")
        return super().read_bytes(rel)

    def listdir(self, rel: str) -> list[str]:
        self._note(rel, "list")
        return super().listdir(rel)

    def exists(self, rel: str) -> bool:
        found = super().exists(rel)
        if found:
            self._note(rel, "exists")
        return found

    def is_dir(self, rel: str) -> bool:
        found = super().is_dir(rel)
        if found:
            self._note(rel, "exists")
        return found

    def readlink(self, rel: str) -> str | None:
        self._note(rel, "link")
        return super().readlink(rel)

    def mode(self, rel: str) -> int | None:
        self._note(rel, "exists")
        return super().mode(rel)

    def run(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, key: str | None = None
    ) -> CommandResult:
        result = super().run(argv, timeout=timeout, key=key)
        self.commands[key or command_key(argv)] = result
        return result
