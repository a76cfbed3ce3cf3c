"""InfiniBand / RoCE link rate: every ACTIVE port at the rate its fabric, netdev and siblings say.

A port that trained below its rate runs, and silently halves a job's bandwidth. What
the rate should be comes, strongest first, from:

- the site: ``[validate] expected_ib_rate`` (or the check's ``expected_gbps``), the
  fabric's rate. GCM's check_iblink holds every active InfiniBand port to its
  manifest's ``link_rate`` and calls any other rate a degraded link (critical);
- the port's netdev (the IPoIB or Ethernet interface on the same PCI function):
  both report the link the HCA trained, so a port below its netdev's speed is
  degraded (GCM's bad-rate node: ``100 Gb/sec (4X EDR)`` ports under 200000 Mb/s ib
  netdevs);
- its siblings (same HCA model and link layer): the fastest ACTIVE one;
- the HCA's capability (``kb.hcas``: the family's fastest port). Only a ceiling:
  many SKUs run slower by design, so an InfiniBand port below it, with nothing
  stronger to say otherwise, is a warning naming the site setting that decides.

Below any of the first three fails; the baseline's rates are ``baseline.ib``'s.
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.interconnect.portinfo import (
    describe_group,
    evidence,
    group,
    ignored,
    is_infiniband,
    layer_unread,
    netdevs,
    rate_text,
    unread_reason,
)
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown, warned
from dolmen.facts.infiniband import IbPort


@check(
    "interconnect.ib.rate",
    title="Every active port links at the rate of its fabric, its netdev and its siblings",
    level=Level.QUICK,
    needs=("infiniband", "network"),
    when=("infiniband",),
    remedy=(
        "A port below its rate trained down: check the cable/transceiver with mlxlink -d "
        "<device> -p <port> (speed, width, FEC, errors), the switch port's configured speed, "
        "and reseat or replace the cable."
    ),
    limits={"expected_gbps": None, "ignore_ports": []},
    source=(
        "GCM check_iblink (active link rate != the manifest's link_rate: degraded, critical); "
        "NHC check_hw_ib <rate>; the port's netdev speed; its siblings; kb.hcas capability"
    ),
)
def rate(ctx: Context) -> list[Outcome]:
    """Reads each ACTIVE port's rate, ``[validate] expected_ib_rate``, the netdev on the port's
    PCI function, the sibling ports and the HCA family's capability."""
    ports = ctx.infiniband.ports
    site = ctx.config.get("validate", "expected_ib_rate")
    origin = "[validate] expected_ib_rate"
    if site is None and ctx.limit("expected_gbps") is not None:
        site, origin = ctx.limit("expected_gbps"), "the site's expected rate"
    peers: dict[Any, list[float]] = {}
    for p in ports:
        if p.state == "ACTIVE" and p.rate_gbps is not None and not layer_unread(ctx, p):
            peers.setdefault(group(p), []).append(p.rate_gbps)
    speeds = netdevs(ctx)
    if not ports:  # a vanished device alone: interconnect.ib.port_state's
        return [skipped("host", "no port read: no rate to judge")]
    out: list[Outcome] = []
    for p in ports:
        ev = evidence(p)
        if ignored(ctx, p):
            out.append(skipped(p.subject, "listed in ignore_ports", **ev))
        elif p.state != "ACTIVE":
            out.append(skipped(p.subject, f"port is {p.state or 'unreadable'}: no rate to judge"))
        elif p.rate_gbps is None:
            why = unread_reason(ctx, p, "rate_gbps")
            out.append(unknown(p.subject, f"rate unreadable: {why}", **ev))
        elif layer := layer_unread(ctx, p):  # InfiniBand or RoCE: whose rate applies is unknown
            said = f"{rate_text(p)}; link layer {layer}: which fabric's rate applies is unknown"
            out.append(unknown(p.subject, said, **ev))
        else:
            wants: list[tuple[float, str]] = []
            if site is not None and is_infiniband(p):
                wants.append((float(site), origin))
            named = [(n, s) for n, s in speeds.get(p.pci_bdf or "", []) if s]
            if named:
                name, mbps = max(named, key=lambda t: t[1] or 0)
                wants.append((mbps / 1000, f"its netdev {name}'s speed"))
            group_rates = peers.get(group(p), [])
            if len(group_rates) >= 2:
                what = f"the fastest active {describe_group(group(p))} port on this node"
                wants.append((max(group_rates), what))
            out.append(_judge(ctx, p, wants, site is not None, ev))
    return out


def _judge(
    ctx: Context, p: IbPort, wants: list[tuple[float, str]], site: bool, ev: dict[str, Any]
) -> Outcome:
    assert p.rate_gbps is not None
    have = p.rate_gbps
    ev = ev | {"expected": {what: want for want, what in wants}}
    below = [(want, what) for want, what in wants if have < want]
    if below:
        want, what = below[0]
        ev["expected_gbps"] = want
        return failed(p.subject, f"{rate_text(p)}, below {want:g} Gb/s ({what})", **ev)
    model = ctx.kb.hcas.get(p.hca_type)
    if model is not None:
        ev["capability_gbps"] = model.max_gbps
    if model is not None and is_infiniband(p) and not site and have < model.max_gbps:
        return warned(
            p.subject,
            f"{rate_text(p)}, below the {model.max_gbps:g} Gb/s a {model.name} port reaches: "
            "a slower fabric or SKU, or a link that trained down",
            remedy=(
                "Set [validate] expected_ib_rate to the fabric's rate (the warning becomes a "
                "pass or a failure); if the fabric is faster, check the link with mlxlink -d "
                f"{p.device} -p {p.port} and the switch port's speed."
            ),
            **ev,
        )
    if wants:
        best = max(wants)
        return passed(p.subject, f"{rate_text(p)} (expected {best[0]:g} Gb/s: {best[1]})", **ev)
    if model is not None and have >= model.max_gbps:
        return passed(p.subject, f"{rate_text(p)}, the {model.name}'s fastest rate", **ev)
    return skipped(
        p.subject,
        f"{rate_text(p)}: no other active {describe_group(group(p))} port to compare with; "
        "set [validate] expected_ib_rate",
        **ev,
    )
