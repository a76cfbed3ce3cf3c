"""A job's members as addresses, from the names a scheduler gives.

The scheduler names nodes; the policy's sets hold addresses. Slurm's NodeAddr is an
address or a name: ``resolve`` keeps an address and refuses, rather than guesses, a name
that does not resolve (this host's own addresses come from ``net.role``).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence


def resolve(names: Sequence[str]) -> list[str]:
    """Each name as one address (an address stays itself; a name, its first IPv4 address,
    else its first IPv6 one); OSError naming the first that does not resolve."""
    out: list[str] = []
    for name in names:
        try:
            out.append(str(ipaddress.ip_address(name)))
            continue
        except ValueError:
            pass
        try:
            infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
        except OSError as e:
            raise OSError(f"node {name!r} does not resolve to an address: {e}") from e
        addrs = sorted({str(i[4][0]) for i in infos}, key=lambda a: (":" in a, a))
        if not addrs:
            raise OSError(f"node {name!r} does not resolve to an address")
        out.append(addrs[0])
    return out
