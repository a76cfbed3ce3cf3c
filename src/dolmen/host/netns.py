"""A host inside a named network namespace: its commands run through ``ip netns exec``.

Files are the live machine's (a network namespace does not change the mount view that
``ip netns exec`` sets up, apart from /sys and /etc/netns), so reads and writes behave as
on the live host; every command sees the namespace's interfaces, addresses, sysctls
under /proc/sys/net, and nftables ruleset. Every layer above drives a namespace exactly
as it drives a machine: tests and benchmarks build a small cluster of them (docs/net.md).

``add_namespace`` / ``delete_namespace`` create and remove one (root; names of at most
15 characters so that interfaces named after them fit too).
"""

from __future__ import annotations

import re
import shutil
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dolmen.host.base import DEFAULT_TIMEOUT
from dolmen.host.command import CommandResult, RunStatus
from dolmen.host.live import LiveHost

# iproute2 names namespaces as files in /run/netns; keep to what is safe in an argv and a path.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$")


class NetnsHost(LiveHost):
    """The live machine seen from inside network namespace ``name`` (see module docstring)."""

    kind = "netns"

    def __init__(self, name: str, root: Path = Path("/")) -> None:
        super().__init__(root)
        if not _NAME.match(name):
            raise ValueError(f"network namespace name {name!r}: 1-15 of A-Z a-z 0-9 _ . -")
        self.netns = name

    def run(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, key: str | None = None
    ) -> CommandResult:
        args = tuple(argv)
        # `ip netns exec` reports an absent program as its own failure (exit 255): say
        # MISSING, as the live host does, so "no nft here" reads the same in both.
        if not args or shutil.which(args[0]) is None:
            what = args[0] if args else "(empty command)"
            return CommandResult(args, RunStatus.MISSING, reason=f"{what} not found on PATH")
        if shutil.which("ip") is None:
            return CommandResult(args, RunStatus.MISSING, reason="ip not found on PATH")
        res = super().run(("ip", "netns", "exec", self.netns, *args), timeout=timeout, key=key)
        # Results name the command that was asked for, not the wrapper.
        return CommandResult(args, res.status, res.stdout, res.stderr, res.rc, res.reason)

    @property
    def hostname(self) -> str:
        return f"{socket.gethostname()}:netns/{self.netns}"

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "netns": self.netns}


def add_namespace(name: str) -> NetnsHost:
    """Create network namespace ``name`` with its loopback up; OSError when refused
    (not root, exists already, no iproute2)."""
    host = NetnsHost(name)
    live = LiveHost()
    made = live.run(["ip", "netns", "add", name])
    if not made.ok:
        raise OSError(f"ip netns add {name}: {made.stderr.strip() or made.failure()}")
    up = host.run(["ip", "link", "set", "lo", "up"])
    if not up.ok:
        delete_namespace(name)
        raise OSError(f"ip link set lo up in {name}: {up.stderr.strip() or up.failure()}")
    return host


def delete_namespace(name: str) -> bool:
    """Remove network namespace ``name`` (its interfaces go with it); False if it was not
    there or could not be removed."""
    if not _NAME.match(name):
        return False
    return LiveHost().run(["ip", "netns", "del", name]).ok
