"""A small cluster of network namespaces for the net tests (docs/net.md "Tests").

``srv`` is the host under test (its nftables table is what a test applies); ``cli`` is
every other host at once: one veth pair, and on the ``cli`` side one address per role,
so a probe from a member, an outsider or the management host is a source address:

    srv 10.77.0.1  <-veth->  cli 10.77.0.2 (member), .3 (outsider), .10 (management)

Names carry the pid (``dnet<pid>s``, ``dnet<pid>c``), so parallel runs never collide
and no lock is needed; both namespaces, and the server in ``srv``, go in ``finally``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from dolmen.host.netns import NetnsHost, add_namespace, delete_namespace

PEER = str(Path(__file__).with_name("netns_peer.py"))
SRV, MEMBER, OUTSIDER, MGMT = "10.77.0.1", "10.77.0.2", "10.77.0.3", "10.77.0.10"
PORTS = (22, 29500, 40050, 9999)  # ssh, rendezvous, an NCCL port, one no policy opens


@dataclass
class Cluster:
    srv: NetnsHost
    cli: str

    def probe(self, *items: tuple[str, int, str]) -> list[str]:
        """(source address, port, proto) from ``cli`` to ``srv``: open/refused/dropped."""
        args = json.dumps([[src, SRV, port, proto] for src, port, proto in items])
        out = _ns(self.cli, sys.executable, PEER, "probe", args)
        return list(json.loads(out))

    def reset(self) -> None:
        """No dolmen table in ``srv``."""
        _ns(self.srv.netns, "nft", "delete table inet dolmen", check=False)


def _ns(ns: str, *argv: str, check: bool = True) -> str:
    res = subprocess.run(
        ["ip", "netns", "exec", ns, *argv], capture_output=True, text=True, timeout=30
    )
    if check and res.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} in {ns}: {res.stderr.strip()}")
    return res.stdout


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    if os.geteuid() != 0 or not (shutil.which("ip") and shutil.which("nft")):
        pytest.skip("needs root, iproute2 and nftables to build network namespaces")
    tag = f"dnet{os.getpid()}"
    made: list[str] = []
    server: subprocess.Popen[str] | None = None
    try:
        try:
            srv = add_namespace(f"{tag}s")
            made.append(srv.netns)
            cli = add_namespace(f"{tag}c")
            made.append(cli.netns)
        except OSError as e:
            pytest.skip(f"cannot create network namespaces here: {e}")
        for argv in (
            [
                "ip",
                "link",
                "add",
                f"{tag}s",
                "netns",
                srv.netns,
                "type",
                "veth",
                "peer",
                "name",
                f"{tag}c",
                "netns",
                cli.netns,
            ],
            ["ip", "-n", srv.netns, "addr", "add", f"{SRV}/24", "dev", f"{tag}s"],
            ["ip", "-n", srv.netns, "link", "set", f"{tag}s", "up"],
            *[
                ["ip", "-n", cli.netns, "addr", "add", f"{a}/24", "dev", f"{tag}c"]
                for a in (MEMBER, OUTSIDER, MGMT)
            ],
            ["ip", "-n", cli.netns, "link", "set", f"{tag}c", "up"],
        ):
            subprocess.run(argv, check=True, capture_output=True, timeout=30)
        server = subprocess.Popen(
            ["ip", "netns", "exec", srv.netns, sys.executable, PEER, "serve", *map(str, PORTS)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        yield Cluster(srv, cli.netns)
    finally:
        if server is not None:
            server.kill()
            server.wait(10)
        for ns in made:
            delete_namespace(ns)
