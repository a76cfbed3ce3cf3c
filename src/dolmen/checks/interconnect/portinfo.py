"""How the interconnect checks read one HCA port: its kind, its siblings, its netdev.

Siblings are the ports of one build on one node: the same HCA model (``hca_type``) and
link layer. Eight identical ConnectX-7 rails are siblings; the two ConnectX-6 Dx
ports of the front-end network are not theirs. A rail that is down while most of its
siblings are ACTIVE is a missing rail (GPUd marks such a node unhealthy), whereas a
model whose ports are mostly down is a model the node does not use.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dolmen.checks.context import Context
from dolmen.facts import FactError
from dolmen.facts.infiniband import IbPort
from dolmen.host.command import NOT_IN_BUNDLE

Group = tuple[str | None, str]


def is_infiniband(port: IbPort) -> bool:
    """Whether the port runs the InfiniBand link layer (an unknown link layer counts)."""
    return (port.link_layer or "").lower() != "ethernet"


def ignored(ctx: Context, port: IbPort) -> bool:
    """Whether the site lists the port (``mlx5_2/1``) or its device (``mlx5_2``) as unused."""
    names = {str(n) for n in ctx.limit("ignore_ports")}
    return port.device in names or f"{port.device}/{port.port}" in names


def unread_reason(ctx: Context, port: IbPort, field: str) -> str:
    """Why a port's field is None, from the facts."""
    return ctx.infiniband.unread.get(f"{port.device}/{port.port}.{field}", "not reported")


def layer_unread(ctx: Context, port: IbPort) -> str | None:
    """Why the port's link layer could not be read (a FIFO at ``link_layer``, a bundle
    without it), or None when it was read or the kernel has no such file (InfiniBand)."""
    return ctx.infiniband.unread.get(f"{port.device}/{port.port}.link_layer")


def group(port: IbPort) -> Group:
    """The sibling group of a port: HCA model and link layer."""
    return (port.hca_type, (port.link_layer or "InfiniBand").lower())


def describe_group(key: Group) -> str:
    """``MT4129 ethernet`` -> ``MT4129 Ethernet`` for summaries."""
    model, layer = key
    return f"{model or 'HCA'} {'Ethernet (RoCE)' if layer == 'ethernet' else 'InfiniBand'}"


def is_up(port: IbPort) -> bool:
    """ACTIVE with the physical link up (or not reported by the source)."""
    return port.state == "ACTIVE" and port.phys_state in ("LinkUp", None)


def siblings(ports: Iterable[IbPort], port: IbPort) -> tuple[int, int]:
    """(ACTIVE siblings, all siblings) of ``port``, itself excluded."""
    same = [p for p in ports if group(p) == group(port) and p.subject != port.subject]
    return sum(is_up(p) for p in same), len(same)


def missing_rail(ports: Iterable[IbPort], port: IbPort) -> str | None:
    """Why a port that is not up is a missing rail, or None when its siblings are mostly
    down too (a model this node does not use): at least two siblings ACTIVE and more of
    them up than down."""
    up, total = siblings(ports, port)
    down = total - up + 1
    if up >= 2 and up > down:
        return f"{up} of its {total} {describe_group(group(port))} siblings are ACTIVE"
    return None


def netdevs(ctx: Context) -> dict[str, list[tuple[str, int | None]]]:
    """Physical netdevs by PCI address: (name, speed in Mb/s) each; {} when unreadable."""
    try:
        interfaces = ctx.network.interfaces
    except FactError:
        return {}
    out: dict[str, list[tuple[str, int | None]]] = {}
    for i in interfaces:
        if i.pci_bdf and not i.virtual:
            out.setdefault(i.pci_bdf, []).append((i.name, i.speed_mbps))
    return out


def rate_text(p: IbPort) -> str:
    """The port's rate as its source wrote it, else in Gb/s."""
    if p.rate_text and "Gb/sec" in p.rate_text:
        return p.rate_text.strip()
    return f"{p.rate_gbps:g} Gb/s" if p.rate_gbps is not None else "rate unknown"


def evidence(p: IbPort) -> dict[str, Any]:
    """What a finding about a port shows."""
    return {
        "state": p.state,
        "phys_state": p.phys_state,
        "rate_gbps": p.rate_gbps,
        "link_layer": p.link_layer,
        "hca_type": p.hca_type,
        "source": p.source,
    }


def uptime_reason(ctx: Context) -> str:
    """Why the uptime is unknown (the check declares ``os``): ``not in this bundle: ...``."""
    try:
        why = ctx.os.unread.get("uptime_s")
    except FactError as e:
        return e.message
    if not why:
        return "proc/uptime not read"
    return f"{why}: proc/uptime" if why in ("missing", NOT_IN_BUNDLE) else why
