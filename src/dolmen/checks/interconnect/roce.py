"""RoCE ports: RDMA ports with the Ethernet link layer, whose state is their netdev's.

mlx5 reports a RoCE port ACTIVE/LinkUp when its netdev runs and has carrier,
DOWN/Disabled when the netdev is not running (set down), and DOWN/Polling when the
netdev runs without carrier (drivers/infiniband/hw/mlx5 ``mlx5_query_port_roce``).
The netdev is the interface on the same PCI function.

A port set down is not in use, unless its siblings say otherwise: when most ports of
the same model are ACTIVE (6 of 8 ConnectX-7 rails, gpud's "some ports down" H100
node, which GPUd calls unhealthy), the two that are down are missing rails, and fail.
The GID table (RoCE needs an IP address on the netdev) is not in the facts yet.
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.interconnect.portinfo import (
    ignored,
    layer_unread,
    missing_rail,
    netdevs,
    unread_reason,
)
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown
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
    source=(
        "mlx5_ib port state of RoCE ports (mlx5_query_port_roce); NVSentinel RoCE monitoring; "
        "gpud infiniband component (fewer ACTIVE rails than expected: unhealthy)"
    ),
)
def roce(ctx: Context) -> list[Outcome]:
    """Reads state/phys_state of Ethernet link-layer ports and their netdev (same PCI address)."""
    ports = [p for p in ctx.infiniband.ports if (p.link_layer or "").lower() == "ethernet"]
    unread = [
        unknown(p.subject, f"link layer {why}: RoCE or InfiniBand is unknown")
        for p in ctx.infiniband.ports
        if (why := layer_unread(ctx, p))
    ]
    if not ports:
        return unread or [skipped("host", "no RoCE (Ethernet link-layer) port")]
    by_bdf = netdevs(ctx)
    return unread + [_port(ctx, p, [n for n, _ in by_bdf.get(p.pci_bdf or "", [])]) for p in ports]


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
    # Without the interface read, the port's own state is the evidence, said as such.
    shown = netdev or "its Ethernet interface (none read)"
    if ignored(ctx, p):
        return skipped(p.subject, "listed in ignore_ports", **ev)
    if p.state is None:
        return unknown(p.subject, f"port state unreadable: {unread_reason(ctx, p, 'state')}", **ev)
    if p.state == "ACTIVE":
        if netdev is None:
            return passed(
                p.subject,
                "RoCE port ACTIVE (its own state; no Ethernet interface read on its PCI function)",
                **ev,
            )
        return passed(p.subject, f"RoCE port active: {shown} runs with carrier", **ev)
    if p.phys_state == "Disabled":
        rail = missing_rail(ctx.infiniband.ports, p)
        if rail:
            return failed(
                p.subject,
                f"{shown} is set down (port DOWN/Disabled) while {rail}: a missing rail"
                if netdev
                else f"port DOWN/Disabled (set down) while {rail}: a missing rail",
                remedy="Bring the rail up (ip link set <netdev> up) and find why it went down "
                "(dmesg, journalctl -u NetworkManager/systemd-networkd); list <device> in "
                "ignore_ports if the node is built without it.",
                **ev,
            )
        return skipped(p.subject, f"{shown} is set down: the port is not in use", **ev)
    if p.phys_state == "Polling":
        return failed(
            p.subject,
            f"{shown} is up without carrier (port DOWN/Polling)"
            if netdev
            else "port DOWN/Polling: up without carrier",
            remedy="Check the cable and the switch port: ethtool <netdev>, "
            "mlxlink -d <device> -p <port>.",
            **ev,
        )
    return failed(p.subject, f"RoCE port is {p.state}/{p.phys_state or '?'}", **ev)
