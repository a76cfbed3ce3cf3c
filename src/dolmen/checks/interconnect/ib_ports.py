"""InfiniBand ports: logical and physical state, devices that vanished, sysfs against ibstat.

A port is usable when its logical state is ACTIVE (the subnet manager configured it)
and its physical state LinkUp. The other states say where it stopped (IBTA vol. 1,
PortInfo): DOWN with Polling means no link partner (cable, transceiver, switch port),
DOWN with Disabled means the port was switched off, INIT means the link trained but
no subnet manager answered, ARMED that it was configured but not activated. A state
that could not be parsed is unknown, with the text quoted: it says nothing of a cable.

A device ibstat listed and then could not stat (``ibpanic: ... stat of IB device
'mlx5_8' failed``) is an HCA that vanished under the driver: it fails, named.

Ethernet link-layer ports (RoCE) mirror their netdev instead; ``interconnect.roce``
judges them. The rate is ``interconnect.ib.rate``'s.
"""

from __future__ import annotations

from collections import defaultdict

from dolmen.checks.context import Context
from dolmen.checks.interconnect.portinfo import (
    evidence,
    ignored,
    is_infiniband,
    layer_unread,
    missing_rail,
    rate_text,
    unread_reason,
)
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown, warned
from dolmen.facts.infiniband import IbPort
from dolmen.host.command import NOT_IN_BUNDLE

_WHY = {
    ("DOWN", "Polling"): (
        "no link partner: reseat or replace the cable/transceiver and check the switch port "
        "(mlxlink -d <device> -p <port> shows the module and the peer)"
    ),
    ("DOWN", "Disabled"): (
        "the port is disabled: enable it (ibportstate -C <device> -P <port> -D 0 <port> enable, "
        "or ip link set <netdev> up) or list it in ignore_ports if it is meant to be unused"
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
LOST_REMEDY = (
    "The HCA was listed and then gone: look for mlx5_core errors in dmesg (a firmware fatal "
    "error, a PCIe link drop, a health poll failure), check lspci for the device, reset or "
    "reseat the HCA and update its firmware; drain the node (<drain>) meanwhile."
)
_ABSENT = ("missing", NOT_IN_BUNDLE)


@check(
    "interconnect.ib.port_state",
    title="Every InfiniBand port is ACTIVE with its physical link up, and no HCA vanished",
    level=Level.QUICK,
    needs=("infiniband",),
    when=("infiniband",),
    remedy=IB_REMEDY,
    limits={"ignore_ports": []},
    source=(
        "IBTA PortInfo states; NHC check_hw_ib (ACTIVE, LinkUp); gpud infiniband component "
        "(ibstat's ibpanic exit 255 on a vanished device)"
    ),
)
def port_state(ctx: Context) -> list[Outcome]:
    """Reads ``state`` and ``phys_state`` of each InfiniBand link-layer port, the devices a
    tool could not read, and whether ibstat (when it is the source) failed."""
    facts = ctx.infiniband
    out = [
        failed(f"ib:{dev}", f"IB device {dev} vanished: {line}", remedy=LOST_REMEDY, line=line)
        for dev, line in sorted(facts.lost_devices.items())
    ]
    why = facts.unread.get("ibstat", "")
    if why and "sysfs" not in facts.read and not facts.lost_devices and not why.startswith(_ABSENT):
        out.append(unknown("host", f"ibstat failed: {why}: ports it did not print are unknown"))
    ports = [p for p in facts.ports if is_infiniband(p)]
    if not ports and not out:
        return [skipped("host", "no InfiniBand link-layer port (RoCE: interconnect.roce)")]
    return out + [_state(ctx, p) for p in ports]


def _state(ctx: Context, p: IbPort) -> Outcome:
    ev = evidence(p)
    if ignored(ctx, p):
        return skipped(p.subject, "listed in ignore_ports", **ev)
    if p.state is None:
        return unknown(p.subject, f"port state unreadable: {unread_reason(ctx, p, 'state')}", **ev)
    phys_unread = f"{p.device}/{p.port}.phys_state" in ctx.infiniband.unread
    if p.state == "ACTIVE" and p.phys_state is None and phys_unread:
        why = unread_reason(ctx, p, "phys_state")
        return unknown(p.subject, f"ACTIVE, physical state unreadable: {why}", **ev)
    if p.state == "ACTIVE" and p.phys_state in ("LinkUp", None):
        shown = p.phys_state or f"LinkUp (implied: {p.source} gives no physical state)"
        return passed(p.subject, f"ACTIVE, {shown}, {rate_text(p)}", **ev)
    if layer := layer_unread(ctx, p):  # a RoCE port set down is unused, an IB port down fails
        return unknown(
            p.subject,
            f"port is {p.state}/{p.phys_state or 'unread'}; link layer {layer}: an InfiniBand "
            "rail down or a RoCE port not in use is unknown",
            **ev,
        )
    if p.phys_state is None:
        why = unread_reason(ctx, p, "phys_state")
        return failed(
            p.subject,
            f"port is {p.state} (physical state unreadable: {why})",
            remedy="Read the port again: ibstat <device> <port>; mlxlink -d <device> -p <port> "
            "says why the link is down.",
            **ev,
        )
    hint = _WHY.get((p.state, p.phys_state)) or _WHY.get((p.state, None))
    remedy = hint or None  # a template: the runner fills <device> and <port> (checks/remedy.py)
    rail = missing_rail(ctx.infiniband.ports, p)
    note = f" while {rail}" if rail else ""
    return failed(p.subject, f"port is {p.state}/{p.phys_state}{note}", remedy=remedy, **ev)


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
    if "sysfs" not in facts.read:
        only = ", ".join(facts.read) or "no tool"
        return [skipped("host", f"ports known from {only} only: no sysfs tree to compare with")]
    why = facts.unread.get("ibstat")
    if why is not None and not facts.ibstat:
        if why.startswith(NOT_IN_BUNDLE):
            return [skipped("host", f"{why}: sysfs is the only source")]
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
