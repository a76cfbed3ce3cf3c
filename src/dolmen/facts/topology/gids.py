"""The RoCE v2 GID index of a port, from its GID table in sysfs.

``sys/class/infiniband/<dev>/ports/<n>/gids/<i>`` holds GID ``i`` (an IPv6 address in
eight groups; an IPv4 address appears mapped, ``::ffff:10.0.0.1``) and
``gid_attrs/types/<i>`` its type (``IB/RoCE v1`` or ``RoCE v2``). Every IP address of the
netdev gets one entry of each type; NCCL_IB_GID_INDEX names the one NCCL should use:
RoCE v2 (routable, UDP-encapsulated) with the IPv4 address, as NVIDIA's RoCE guides
do. The kernel refuses to read the type of an empty entry (all zeros), so only
entries with a GID are asked for their type.
"""

from __future__ import annotations

import ipaddress

from dolmen.host import Host

CLASS = "sys/class/infiniband"
ROCE_V2 = "RoCE v2"
_MAX_ENTRIES = 256  # mlx5's table size; a hostile tree with more is read this far


def ipv4_mapped(gid: str) -> bool:
    """Whether a GID as sysfs prints it (``0000:0000:0000:0000:0000:ffff:0a00:0001``) is
    an IPv4-mapped address; False for anything else, malformed text included."""
    try:
        return ipaddress.IPv6Address(gid.strip()).ipv4_mapped is not None
    except ValueError:
        return False


def pick_roce_v2(entries: list[tuple[int, str, str]]) -> int | None:
    """The lowest index whose GID is IPv4-mapped and whose type is RoCE v2."""
    found = [i for i, gid, kind in entries if kind.strip() == ROCE_V2 and ipv4_mapped(gid)]
    return min(found) if found else None


def read_roce_v2_index(
    host: Host, device: str, port: int, link_layer: str | None
) -> tuple[int | None, str]:
    """The RoCE v2 IPv4 GID index of an Ethernet port and, when there is none, why.
    InfiniBand ports need no GID index: (None, "")."""
    if (link_layer or "").lower() != "ethernet":
        return None, ""
    base = f"{CLASS}/{device}/ports/{port}"
    names = [n for n in host.listdir(f"{base}/gids") if n.isdigit()]
    if not names:
        return None, f"{host.absent(base + '/gids')}: {base}/gids"
    entries: list[tuple[int, str, str]] = []
    for name in sorted(names, key=int)[:_MAX_ENTRIES]:
        gid = host.read_opt(f"{base}/gids/{name}") or ""
        if not gid.strip() or set(gid.strip()) <= {"0", ":"}:
            continue  # an empty entry: the kernel refuses its type
        kind = host.read_opt(f"{base}/gid_attrs/types/{name}") or ""
        entries.append((int(name), gid, kind))
    index = pick_roce_v2(entries)
    if index is None:
        return None, "no RoCE v2 GID with an IPv4 address (is an IPv4 address set on its netdev?)"
    return index, ""
