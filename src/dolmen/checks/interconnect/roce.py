"""RoCE ports: RDMA ports with the Ethernet link layer, whose state is their netdev's.

mlx5 reports a RoCE port ACTIVE/LinkUp when its netdev runs and has carrier,
DOWN/Disabled when the netdev is not running (set down: the port is not in use),
and DOWN/Polling when the netdev runs without carrier (drivers/infiniband/hw/mlx5
``mlx5_query_port_roce``). The netdev is the interface on the same PCI function.
The GID table (RoCE needs an IP address on the netdev) is not in the facts yet.
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.interconnect.ib_ports import ignored, unread_reason
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown
from dolmen.facts import FactError
from dolmen.facts.infiniband import IbPort


@check(
    "interconnect.roce",
    title="Every RoCE port in use has its netdev running with a link",
    level=Level.QUICK,
    needs=("infiniband", "network"),
    when=("infiniband",),
    remedy=(
        "Check the port's netdev: ip link show <netdev>, ethtool <netdev> (link, speed), the "
        "cable and the switch port; RoCE also needs an IP address on it (show_gids lists the "
        "GIDs)."
    ),
    limits={"ignore_ports": []},
    source="mlx5_ib port state of RoCE ports (mlx5_query_port_roce); NVSentinel RoCE monitoring",
)
def roce(ctx: Context) -> list[Outcome]:
    """Reads state/phys_state of Ethernet link-layer ports and their netdev (same PCI address)."""
    ports = [p for p in ctx.infiniband.ports if (p.link_layer or "").lower() == "ethernet"]
    if not ports:
        return [skipped("host", "no RoCE (Ethernet link-layer) port")]
    netdevs = _netdevs(ctx)
    return [_port(ctx, p, netdevs.get(p.pci_bdf or "", [])) for p in ports]


def _netdevs(ctx: Context) -> dict[str, list[str]]:
    try:
        interfaces = ctx.network.interfaces
    except FactError:
        return {}
    out: dict[str, list[str]] = {}
    for i in interfaces:
        if i.pci_bdf and not i.virtual:
            out.setdefault(i.pci_bdf, []).append(i.name)
    return out


def _port(ctx: Context, p: IbPort, names: list[str]) -> Outcome:
    netdev = "/".join(names) or None
    ev: dict[str, Any] = {
        "state": p.state,
        "phys_state": p.phys_state,
        "rate_gbps": p.rate_gbps,
        "netdev": netdev,
        "pci_bdf": p.pci_bdf,
        "gid_table": "not in the facts",
    }
    shown = netdev or "its netdev"
    if ignored(ctx, p):
        return skipped(p.subject, "listed in ignore_ports", **ev)
    if p.state is None:
        return unknown(p.subject, f"port state unreadable: {unread_reason(ctx, p, 'state')}", **ev)
    if p.state == "ACTIVE":
        return passed(p.subject, f"RoCE port active: {shown} runs with carrier", **ev)
    if p.phys_state == "Disabled":
        return skipped(p.subject, f"{shown} is set down: the port is not in use", **ev)
    if p.phys_state == "Polling":
        return failed(
            p.subject,
            f"{shown} is up without carrier (port DOWN/Polling)",
            remedy=f"Check the cable and the switch port: ethtool {netdev or '<netdev>'}, "
            f"mlxlink -d {p.device} -p {p.port}.",
            **ev,
        )
    return failed(p.subject, f"RoCE port is {p.state}/{p.phys_state or '?'}", **ev)
