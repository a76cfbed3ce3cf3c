"""A small cluster of network namespaces for the isolation tests (issue 13).

Six nodes, each a network namespace with one veth ``eth0`` on a private subnet:
two jobs of two members each (``j1a j1b``, ``j2a j2b``), one management host
(``mgmt``) and one outsider (``out``). Their other ends sit on a bridge inside a
seventh namespace (the fabric) that this module owns, so nothing is forwarded by the
root namespace and no address exists outside these namespaces. Both veth ends are
created directly inside their namespaces (``ip link add ... netns``), so no interface
ever appears in the root namespace, and names need only be unique per namespace.

Namespace names carry this process's pid (two test runs never collide); everything is
deleted in ``finally``, and ``/run/netns`` is unmounted when this run made it
(notes/real-components.md: "umount /run/netns after the last namespace").
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from ipaddress import IPv4Address

import pytest

SUBNET = "10.77.0"
# name -> last octet; the order is the tests' and the bench's matrix order.
NODES = {"j1a": 11, "j1b": 12, "j2a": 21, "j2b": 22, "mgmt": 2, "out": 99}
JOBS = {"1": ("j1a", "j1b"), "2": ("j2a", "j2b")}


@dataclass(frozen=True)
class Node:
    """One namespace of the cluster."""

    name: str
    netns: str
    address: IPv4Address

    def exec(self, *argv: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` inside this node's namespace."""
        return subprocess.run(
            ["ip", "netns", "exec", self.netns, *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


@dataclass(frozen=True)
class Cluster:
    """The nodes, by name, and the fabric namespace that joins them."""

    nodes: dict[str, Node]
    fabric: str

    def address(self, name: str) -> IPv4Address:
        return self.nodes[name].address


def _ip(*argv: str) -> None:
    done = subprocess.run(["ip", *argv], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(argv)}: {done.stderr.strip()}")


def can_build() -> str | None:
    """Why the cluster cannot be built here, or None."""
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    if shutil.which("ip") is None:
        return "needs iproute2 (ip)"
    return None


@contextlib.contextmanager
def cluster(tag: str = "") -> Iterator[Cluster]:
    """Build the cluster, yield it, delete every namespace it made (even half-built)."""
    why = can_build()
    if why:
        pytest.skip(why)
    prefix = f"dn{os.getpid()}{tag}"
    mounted_before = os.path.ismount("/run/netns")
    made: list[str] = []
    try:
        fabric = f"{prefix}fab"
        _ip("netns", "add", fabric)
        made.append(fabric)
        _ip("-n", fabric, "link", "add", "br0", "type", "bridge")
        _ip("-n", fabric, "link", "set", "br0", "up")
        _ip("-n", fabric, "link", "set", "lo", "up")
        nodes: dict[str, Node] = {}
        for name, octet in NODES.items():
            ns = f"{prefix}{name}"
            _ip("netns", "add", ns)
            made.append(ns)
            port = f"v{name}"  # inside the fabric only: <= 15 characters
            _ip("link", "add", "eth0", "netns", ns, "type", "veth", "peer", port, "netns", fabric)
            _ip("-n", fabric, "link", "set", port, "master", "br0", "up")
            _ip("-n", ns, "addr", "add", f"{SUBNET}.{octet}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            nodes[name] = Node(name, ns, IPv4Address(f"{SUBNET}.{octet}"))
        yield Cluster(nodes, fabric)
    finally:
        for ns in reversed(made):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        if not mounted_before and os.path.ismount("/run/netns"):
            left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
            if not left.stdout.strip():  # nobody else's namespace lives there
                subprocess.run(["umount", "/run/netns"], capture_output=True, check=False)
