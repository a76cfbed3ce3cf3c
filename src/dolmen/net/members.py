"""Who a job's members are, as addresses: this host's own, or names resolved.

The scheduler names nodes; the policy's sets hold addresses. Both readers here are
read-then-parse: ``parse_ip_addr`` takes ``ip -j addr show`` text (pure, tested on
recorded outputs), ``resolve`` takes a name the scheduler gave (Slurm's NodeAddr is an
address or a name) and refuses, rather than guesses, one that does not resolve.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Sequence

from dolmen.host import Host


def parse_ip_addr(text: str) -> list[str]:
    """The global-scope addresses in ``ip -j addr show`` output (loopback and link-local
    left out: a job's peers never reach them); [] for anything that is not that JSON."""
    try:
        links = json.loads(text)
    except ValueError:
        return []
    found: list[str] = []
    if not isinstance(links, list):
        return []
    for link in links:
        infos = link.get("addr_info") if isinstance(link, dict) else None
        for info in infos if isinstance(infos, list) else []:
            if not isinstance(info, dict) or info.get("scope") != "global":
                continue
            try:
                addr = ipaddress.ip_address(str(info.get("local", "")))
            except ValueError:
                continue
            if not (addr.is_loopback or addr.is_link_local) and str(addr) not in found:
                found.append(str(addr))
    return found


def host_addresses(host: Host) -> list[str]:
    """This host's global addresses; OSError naming the command when it cannot tell."""
    res = host.run(["ip", "-j", "addr", "show"], timeout=10.0)
    if not res.ok:
        raise OSError(f"cannot list this host's addresses: {res.failure()}")
    return parse_ip_addr(res.stdout)


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
