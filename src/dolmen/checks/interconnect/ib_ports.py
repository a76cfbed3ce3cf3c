"""InfiniBand ports: logical and physical state, link rate, and sysfs against ibstat.

A port is usable when its logical state is ACTIVE (the subnet manager configured it)
and its physical state LinkUp. The other states say where it stopped (IBTA vol. 1,
PortInfo): DOWN with Polling means no link partner (cable, transceiver, switch port),
DOWN with Disabled means the port was switched off, INIT means the link trained but
no subnet manager answered, ARMED that it was configured but not activated.

Ethernet link-layer ports (RoCE) mirror their netdev instead; ``interconnect.roce``
judges them.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown, warned
from dolmen.facts.infiniband import IbPort

_WHY = {
    ("DOWN", "Polling"): (
        "no link partner: reseat or replace the cable/transceiver and check the switch port "
        "(mlxlink -d {dev} -p {port} shows the module and the peer)"
    ),
    ("DOWN", "Disabled"): (
        "the port is disabled: enable it (ibportstate -D 0 {port} enable, or ip link set <netdev> "
        "up) or list it in ignore_ports if it is meant to be unused"
    ),
    ("INIT", None): (
        "the link trained but no subnet manager configured it: check opensm/UFM (sminfo) and "
        "the switch's partition"
    ),
    ("ARMED", None): "configured by the subnet manager but not activated: check the SM's log",
}
IB_REMEDY = (
    "Run ibstat and mlxlink -d <device> -p <port>; reseat or replace the cable or transceiver, "
    "check the switch port and the subnet manager (sminfo), then re-read ibstat."
)


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


@check(
    "interconnect.ib.port_state",
    title="Every InfiniBand port is ACTIVE with its physical link up",
    level=Level.QUICK,
    needs=("infiniband",),
    when=("infiniband",),
    remedy=IB_REMEDY,
    limits={"ignore_ports": []},
    source="IBTA PortInfo states; NHC check_hw_ib (ACTIVE, LinkUp); gpud infiniband component",
)
def port_state(ctx: Context) -> list[Outcome]:
    """Reads ``state`` and ``phys_state`` of each InfiniBand link-layer port."""
    ports = [p for p in ctx.infiniband.ports if is_infiniband(p)]
    if not ports:
        return [skipped("host", "no InfiniBand link-layer port (RoCE: interconnect.roce)")]
    return [_state(ctx, p) for p in ports]


def _state(ctx: Context, p: IbPort) -> Outcome:
    ev = _evidence(p)
    if ignored(ctx, p):
        return skipped(p.subject, "listed in ignore_ports", **ev)
    if p.state is None:
        return unknown(p.subject, f"port state unreadable: {unread_reason(ctx, p, 'state')}", **ev)
    if p.state == "ACTIVE" and p.phys_state in ("LinkUp", None):
        return passed(p.subject, f"ACTIVE, {p.phys_state or 'LinkUp'}, {_rate(p)}", **ev)
    why = _WHY.get((p.state, p.phys_state)) or _WHY.get((p.state, None))
    remedy = why.format(dev=p.device, port=p.port) if why else None
    return failed(p.subject, f"port is {p.state}/{p.phys_state or '?'}", remedy=remedy, **ev)


@check(
    "interconnect.ib.rate",
    title="Every active port links at the expected rate",
    level=Level.QUICK,
    needs=("infiniband",),
    when=("infiniband",),
    remedy=(
        "A port below its rate trained down: check the cable/transceiver with mlxlink -d "
        "<device> -p <port> (speed, width, FEC, errors), the switch port's configured speed, "
        "and reseat or replace the cable."
    ),
    limits={"expected_gbps": None, "ignore_ports": []},
    source=(
        "NHC check_hw_ib <rate> (e.g. 400 on NDR); GCM manifest; without a site rate, the "
        "fastest active port of the same HCA model and link layer on this node"
    ),
)
def rate(ctx: Context) -> list[Outcome]:
    """Compares each ACTIVE port's rate with ``expected_gbps`` or with its model's peers."""
    ports = ctx.infiniband.ports
    site = ctx.limit("expected_gbps")
    peers: dict[tuple[str | None, str | None], list[float]] = defaultdict(list)
    for p in ports:
        if p.state == "ACTIVE" and p.rate_gbps is not None:
            peers[(p.hca_type, p.link_layer)].append(p.rate_gbps)
    out: list[Outcome] = []
    for p in ports:
        ev = _evidence(p)
        if ignored(ctx, p):
            out.append(skipped(p.subject, "listed in ignore_ports", **ev))
        elif p.state != "ACTIVE":
            out.append(skipped(p.subject, f"port is {p.state or 'unreadable'}: no rate to judge"))
        elif p.rate_gbps is None:
            why = unread_reason(ctx, p, "rate_gbps")
            out.append(unknown(p.subject, f"rate unreadable: {why}", **ev))
        elif site is not None and is_infiniband(p):
            want = float(site)
            out.append(_against(p, want, "the site's expected rate", ev))
        else:
            group = peers[(p.hca_type, p.link_layer)]
            if len(group) < 2:
                out.append(
                    skipped(
                        p.subject,
                        f"{_rate(p)}: no other active {p.hca_type or 'HCA'} "
                        f"{p.link_layer or ''} port to compare with; set expected_gbps",
                        **ev,
                    )
                )
            else:
                what = f"the fastest active {p.hca_type or 'HCA'} port on this node"
                out.append(_against(p, max(group), what, ev))
    return out


def _against(p: IbPort, want: float, what: str, ev: dict[str, Any]) -> Outcome:
    ev = ev | {"expected_gbps": want}
    if p.rate_gbps is not None and p.rate_gbps < want:
        return failed(p.subject, f"{_rate(p)}, below {want:g} Gb/s ({what})", **ev)
    return passed(p.subject, f"{_rate(p)} (expected {want:g} Gb/s: {what})", **ev)


@check(
    "interconnect.ib.sources_agree",
    title="The sysfs tree and ibstat agree on every port",
    level=Level.QUICK,
    needs=("infiniband",),
    when=("infiniband",),
    remedy=(
        "Read both again (ibstat; cat /sys/class/infiniband/*/ports/*/state): a port that "
        "changes between reads is flapping; ibstat failing on a device (ibpanic) points at a "
        "driver or firmware problem: check dmesg for mlx5_core errors and update firmware."
    ),
)
def sources_agree(ctx: Context) -> list[Outcome]:
    """Reads the facts' cross-check of sysfs against ibstat (state, phys state, rate, layer)."""
    facts = ctx.infiniband
    if all(p.source == "ibstat" for p in facts.ports):
        return [skipped("host", "ports known from ibstat only: nothing to compare with")]
    why = facts.unread.get("ibstat")
    if why is not None and not facts.ibstat:
        if why.startswith("missing"):
            return [skipped("host", "ibstat is not installed: sysfs is the only source")]
        return [unknown("host", f"ibstat unreadable: {why}")]
    by_subject: dict[str, list[str]] = defaultdict(list)
    for line in facts.disagreements:
        subject, _, what = line.partition(": ")
        by_subject[subject].append(what)
    out = [
        warned(subject, "; ".join(whats), disagreements=whats)
        for subject, whats in sorted(by_subject.items())
    ]
    if why is not None:
        out.append(warned("host", f"ibstat failed part-way: {why}", ibstat=why))
    if not out:
        out.append(passed("host", f"sysfs and ibstat agree on {len(facts.ports)} port(s)"))
    return out


def _rate(p: IbPort) -> str:
    if p.rate_text and "Gb/sec" in p.rate_text:
        return p.rate_text.strip()
    return f"{p.rate_gbps:g} Gb/s" if p.rate_gbps is not None else "rate unknown"


def _evidence(p: IbPort) -> dict[str, Any]:
    return {
        "state": p.state,
        "phys_state": p.phys_state,
        "rate_gbps": p.rate_gbps,
        "link_layer": p.link_layer,
        "hca_type": p.hca_type,
        "source": p.source,
    }
