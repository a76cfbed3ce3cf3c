"""``dolmen.host``: the only package that touches the machine (STYLE.md rule 1).

``open_host(source)`` gives a live host for None or ``/``, a tree for a folder, an
extracted snapshot or sosreport for a tar archive, and a partial tree for any other
single file dolmen reads (``dolmen.host.paste``: what users paste into a ticket).
``open_live(root)`` is the live host whose files are read under ``root``: the node's
``/`` mounted into the agent's container at ``/host`` (``dolmen serve --host-root``).
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
    "open_live",
]


def open_host(source: str | Path | None = None) -> Host:
    """The host to read: live for None or "/", a host tree folder, or a snapshot archive."""
    if source is None or str(source) == "/":
        from dolmen.host.live import LiveHost

        return LiveHost()
    path = Path(source)
    if path.is_dir():
        if (path / "sos_commands").is_dir() and not (path / "dolmen-snapshot.json").exists():
            from dolmen.host.paste.sos import SosFolderHost

            return SosFolderHost(path)  # an extracted sosreport: read in place, partial
        from dolmen.host.paste.ibclass import looks_like, open_ib_class
        from dolmen.host.tree import TreeHost

        if not any((path / m).exists() for m in _MARKERS) and looks_like(path):
            return open_ib_class(path)  # a pasted /sys/class/infiniband
        return _looks_like_a_host(TreeHost(path), str(path))
    if path.is_file():
        from dolmen.host.paste import is_tar, open_file

        if is_tar(_head(path)):
            from dolmen.host.archive import ArchiveHost

            return _looks_like_a_host(ArchiveHost(path), str(path))
        return open_file(path)
    if path.exists():  # a FIFO, a device, a socket: tarfile would block or stream for ever
        from dolmen.fsutil import kind_of

        raise InputError(
            f"{kind_of(path.stat().st_mode)}, not a host tree, snapshot or file dolmen reads",
            path=str(path),
            hint=_HINT,
        )
    if path.is_symlink():
        raise InputError("a symbolic link to nothing (or a link loop)", path=str(path), hint=_HINT)
    raise InputError("no such host tree, snapshot or file", path=str(path), hint=_HINT)


def open_live(root: str | Path | None = None) -> Host:
    """This machine, its files read under ``root`` (default ``/``) and its commands run
    here: in a container, the node's own /proc, /sys, /etc and /dev mounted read-only at
    ``root``, while nvidia-smi and libnvidia-ml come from the driver root on PATH and
    LD_LIBRARY_PATH. InputError when ``root`` is not a mounted host's root."""
    from dolmen.host.live import LiveHost

    if root is None or str(root) == "/":
        return LiveHost()
    path = Path(root)
    hint = "mount the node's / there read-only (podman -v /:/host:ro,rslave; docs/deploy.md)"
    if not path.is_dir():
        if path.exists():  # a file, a FIFO, a socket: say what it is, not "no such folder"
            from dolmen.fsutil import kind_of

            what = kind_of(path.stat().st_mode)
            raise InputError(f"--host-root: {what}, not a folder", path=str(path), hint=hint)
        raise InputError("--host-root: no such folder", path=str(path), hint=hint)
    if not any((path / part).is_dir() for part in ("proc", "sys", "etc")):
        raise InputError("--host-root: no proc/, sys/ or etc/ under it", path=str(path), hint=hint)
    return LiveHost(path)


_HINT = (
    "--from takes a folder or a .tar.gz made by `dolmen snapshot`, a sosreport, "
    "or one command's output (docs/bundles.md)"
)


def _head(path: Path) -> bytes:
    """The first 4 KiB of a regular file (enough to tell a tar archive, compressed or not),
    opened non-blocking: a file swapped for a FIFO since ``is_file()`` does not hang."""
    import os

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
        try:
            return os.read(fd, 4096)
        finally:
            os.close(fd)
    except OSError as e:
        raise InputError(
            f"cannot read it ({e.strerror or e})", path=str(path), hint=_HINT
        ) from None


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
        hint=_HINT,
    )
