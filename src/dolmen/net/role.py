"""This host's role in the policy: its own addresses, from ``ip -j addr show``.

A static ``[job.<id>]`` job whose members include one of them gets its sets on this
host. Loopback and link-local addresses say nothing about membership and are left out.
"""

from __future__ import annotations

import ipaddress
import json

from dolmen.host import Host
from dolmen.net.model import Address
from dolmen.net.nft import Role


def parse_ip_addr(text: str) -> tuple[Address, ...]:
    """Host addresses (as /32 or /128) in ``ip -j addr show`` output; junk gives ()."""
    try:
        links = json.loads(text)
    except ValueError:
        return ()
    out: list[Address] = []
    for link in links if isinstance(links, list) else []:
        infos = link.get("addr_info", []) if isinstance(link, dict) else []
        for info in infos if isinstance(infos, list) else []:
            local = info.get("local") if isinstance(info, dict) else None
            try:
                ip = ipaddress.ip_address(str(local))
            except ValueError:
                continue
            if not (ip.is_loopback or ip.is_link_local):
                out.append(ipaddress.ip_network(ip))
    return tuple(out)


def host_role(host: Host) -> Role:
    """The role of ``host`` (no addresses when ``ip`` is absent or fails: then no static
    job is compiled in, which denies rather than grants)."""
    res = host.run(["ip", "-j", "addr", "show"])
    return Role(parse_ip_addr(res.stdout) if res.ok else ())
