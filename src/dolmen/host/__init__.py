"""``dolmen.host``: the only package that touches the machine (STYLE.md rule 1).

``open_host(source)`` gives a live host for None or ``/``, a tree for a folder,
and an extracted snapshot for a ``.tar.gz``.
"""

from __future__ import annotations

from pathlib import Path

from dolmen.errors import InputError
from dolmen.host.base import DEFAULT_TIMEOUT, Host
from dolmen.host.command import NOT_IN_BUNDLE, CommandResult, RunStatus, command_key

__all__ = [
    "DEFAULT_TIMEOUT",
    "NOT_IN_BUNDLE",
    "CommandResult",
    "Host",
    "RunStatus",
    "command_key",
    "open_host",
]


def open_host(source: str | Path | None = None) -> Host:
    """The host to read: live for None or "/", a host tree folder, or a snapshot archive."""
    if source is None or str(source) == "/":
        from dolmen.host.live import LiveHost

        return LiveHost()
    path = Path(source)
    if path.is_dir():
        from dolmen.host.tree import TreeHost

        return _looks_like_a_host(TreeHost(path), str(path))
    if path.is_file():
        from dolmen.host.archive import ArchiveHost

        return _looks_like_a_host(ArchiveHost(path), str(path))
    if path.exists():  # a FIFO, a device, a socket: tarfile would block or stream for ever
        from dolmen.fsutil import kind_of

        raise InputError(
            f"{kind_of(path.stat().st_mode)}, not a host tree or snapshot",
            path=str(path),
            hint="--from takes a folder or a .tar.gz made by `dolmen snapshot`",
        )
    raise InputError(
        "no such host tree or snapshot",
        path=str(path),
        hint="--from takes a folder or a .tar.gz made by `dolmen snapshot`",
    )


# What any host tree has at its root: the snapshot's metadata, or recorded commands, or
# the kernel's and the system's folders.
_MARKERS = ("dolmen-snapshot.json", "commands", "proc", "sys", "etc")


def _looks_like_a_host(host: Host, shown: str) -> Host:
    # An empty folder is a host with nothing recorded (tests build hosts up from one);
    # a folder of other things (a home folder, a build tree) is a mistake worth a line.
    if not host.listdir("") or any(host.exists(marker) for marker in _MARKERS):
        return host
    host.close()
    raise InputError(
        "not a host tree: none of dolmen-snapshot.json, commands/, proc/, sys/, etc/ at its top",
        path=shown,
        hint="--from takes a folder or a .tar.gz made by `dolmen snapshot`",
    )
