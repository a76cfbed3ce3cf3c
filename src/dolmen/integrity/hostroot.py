"""The host a seal or a verify reads: live for ``/``, else a tree confined to its root."""

from __future__ import annotations

from pathlib import Path

from dolmen.host import Host

OSRELEASE = "proc/sys/kernel/osrelease"


def open_root(root: str | Path) -> Host:
    """The host whose files are sealed or verified: live for ``/``, else a tree whose
    links are confined to it."""
    if str(root) in ("", "/"):
        from dolmen.host.live import LiveHost

        return LiveHost()
    from dolmen.host.tree import TreeHost

    return TreeHost(Path(root))


def running_kernel(host: Host) -> str | None:
    """The release ``uname -r`` prints, as the host's procfs says it."""
    return host.read_value(OSRELEASE) or None
