"""Cluster-network NICs: their PCIe link, and their Ethernet/IPoIB link and its flaps.

A NIC limited by its PCIe link cannot feed its port: a 400 Gb/s ConnectX-7 needs a
Gen5 x16 link (504 Gb/s); behind Gen4 x16 (252 Gb/s) it loses a third of its rate.
The PCI core says so once at probe ("... available PCIe bandwidth, limited by 16.0
GT/s PCIe x16 link at ...", ``pcie_print_link_status``), and the link registers say
so now.

Which interfaces are in use: the kernel refuses to read ``carrier`` (EINVAL) on an
interface that is set down, so a readable carrier means "configured up". An interface
set down is not in use and is left alone; one set up without carrier is broken. Except
an IPoIB interface set down while its InfiniBand port is ACTIVE: the fabric link is up
and the host cannot use it (GCM's check_iblink LINK_OPERSTATE_DOWN, critical; its
recorded node had ib4 down after 49 carrier losses).
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.interconnect.portinfo import uptime_reason
from dolmen.checks.model import (
    Level,
    Outcome,
    Status,
    check,
    failed,
    passed,
    skipped,
    unknown,
)
from dolmen.checks.system.pcie_links import (
    describe,
    first_per_slot,
    is_mellanox_nic,
    shortfall,
    target,
)
from dolmen.checks.system.since_boot import allowance, describe_uptime, uptime_s
from dolmen.facts import FactError
from dolmen.facts.network import Interface
from dolmen.host.command import NOT_IN_BUNDLE
from dolmen.values.busid import pci_subject

THREE_HOURS_S = 3 * 3600.0


@check(
    "interconnect.nic.pcie_limited",
    title="No Mellanox NIC is limited by its PCIe link",
    level=Level.QUICK,
    needs=("pci", "kernel_log", "infiniband", "network"),
    remedy=(
        "Compare lspci -vvv -s <bdf> LnkCap and LnkSta; move the NIC to a slot with the full "
        "Gen/width, fix the riser or the BIOS bifurcation setting, and reseat the card."
    ),
    source="imbue health_checks: mlx5 'limited by' in dmesg is an error; PCIe LnkSta vs LnkCap",
)
def pcie_limited(ctx: Context) -> list[Outcome]:
    """Reads ``pcie_limited`` kernel-log events and the links of vendor 15b3 network functions."""
    devices = ctx.pci.by_bdf()
    out: dict[str, Outcome] = {}
    for dev in first_per_slot([d for d in devices.values() if is_mellanox_nic(d)]):
        # The NIC's own capability, as the kernel's "capable of" does: behind a slower slot
        # it cannot feed its port either (a 400 Gb/s ConnectX-7 on Gen4 x16 gets 252 Gb/s).
        lack = shortfall(dev.current_link, dev.max_link)
        ev: dict[str, Any] = {
            "driver": dev.driver,
            "description": dev.description,
            "current": describe(dev.current_link),
            "capable": describe(dev.max_link),
            "slot_allows": describe(target(dev, devices)),
        }
        subject = pci_subject(dev.bdf)
        if lack is None:
            why = ctx.pci.unread.get(f"{dev.bdf}.current_link", "not reported")
            out[subject] = unknown(subject, f"NIC link unreadable: {why}", **ev)
        elif lack:
            out[subject] = failed(
                subject, f"NIC link below its capability: {', '.join(lack)}", **ev
            )
        else:
            out[subject] = passed(subject, f"NIC link at {ev['current']}", **ev)
    log = _events(ctx)
    if isinstance(log, str):
        out["host"] = unknown("host", f"kernel log unreadable: {log}")
    else:
        for ev_ in log:
            subject = pci_subject(ev_.bus_id) if ev_.bus_id else "host"
            out[subject] = failed(
                subject,
                f"{ev_.device or 'driver'} reports its PCIe bandwidth limited by {ev_.detail}",
                line=ev_.raw.strip(),
            )
    if not out and not devices and "devices" in ctx.pci.unread:
        # The bus was not read: "no NIC on it" is not known, only the log's silence.
        why = ctx.pci.unread["devices"]
        return [skipped("host", f"no 'limited by' in the log; the PCI devices: {why}")]
    off_bus = hcas_off_bus(ctx, devices)
    if off_bus:  # their links were not read: a pass would stand on their absence
        where = "not in sys/bus/pci"
        if ctx.host.kind != "live":
            where = f"{NOT_IN_BUNDLE}: their PCI functions (sys/bus/pci/devices)"
        names = [n for n, _ in off_bus]
        said = f"the links of the Mellanox HCAs {off_bus[0][1]} shows ({', '.join(names)}): {where}"
        before = out.get("host")
        if before is None or before.status is Status.UNKNOWN:
            said = f"{before.summary}; {said}" if before else said
            out["host"] = unknown("host", said, hcas=names)
    if not out:
        return [passed("host", "no Mellanox NIC on the PCI bus, no 'limited by' in the log")]
    return list(out.values())


def hcas_off_bus(ctx: Context, devices: dict[str, Any]) -> list[tuple[str, str]]:
    """The Mellanox HCAs (name, the source that shows it) that sys/class/infiniband, ibstat
    or a netdev bound to mlx5_core shows, whose PCI function the PCI devices read lack (an
    HCA without a known PCI address counts where no Mellanox function was read at all)."""
    on_bus = {bdf for bdf, d in devices.items() if is_mellanox_nic(d)}
    seen: dict[str, str] = {}

    def off(bdf: str | None) -> bool:
        return bdf not in on_bus if bdf else not on_bus

    with suppress(FactError):
        for p in ctx.infiniband.ports:
            if p.device.startswith("mlx") and off(p.pci_bdf):
                where = "sys/class/infiniband" if p.source == "sysfs" else p.source
                seen.setdefault(p.device, where)
    with suppress(FactError):
        for i in ctx.network.interfaces:
            if (i.driver or "").startswith("mlx") and off(i.pci_bdf):
                seen.setdefault(i.name, "sys/class/net")
    return list(seen.items())


def _events(ctx: Context) -> list[Any] | str:
    try:
        log = ctx.kernel_log
    except FactError as e:
        return e.message
    if log.events is None:
        return log.unread.get("events", "not read")
    return [e for e in log.events if e.kind == "pcie_limited"]


@check(
    "interconnect.nic.link",
    title="Every network interface in use has a link that does not flap",
    level=Level.QUICK,
    remedy=(
        "Check the interface: ip -s link show <nic>, ethtool <nic> (link, speed), the cable "
        "and the switch port; for IPoIB also ibstat. A flapping link needs the cable or "
        "transceiver replaced."
    ),
    needs=("network", "os", "infiniband"),
    limits={"downs_per_3h": 3},
    source=(
        "Azure healthagent network monitor (link down +3 within 3 h is an error; not up: "
        "error); GCM check_iblink (IB port ACTIVE but its netdev down: critical)"
    ),
)
def nic_link(ctx: Context) -> list[Outcome]:
    """Reads carrier, operstate and carrier_down_count of each physical interface, and the
    state of the InfiniBand port on an IPoIB interface's PCI function."""
    facts = ctx.network
    why = facts.unread.get("interfaces", "")
    if not facts.interfaces:
        if why.startswith(NOT_IN_BUNDLE):
            return [skipped("host", why)]
        if why.startswith("missing"):
            return [skipped("host", f"no network interfaces on this host ({why})")]
        return [unknown("host", f"network interfaces unreadable: {why or 'none listed'}")]
    physical = [i for i in facts.interfaces if i.virtual is False]
    if not physical:
        return [skipped("host", "no physical network interface (or no sysfs links to tell)")]
    up = uptime_s(ctx)
    active = _active_ib_ports(ctx)
    return [_interface(ctx, i, up, active.get(i.pci_bdf or "")) for i in physical]


def _active_ib_ports(ctx: Context) -> dict[str, str]:
    """PCI address -> subject of each ACTIVE InfiniBand link-layer port."""
    try:
        ports = ctx.infiniband.ports
    except FactError:
        return {}
    return {
        p.pci_bdf: p.subject
        for p in ports
        if p.pci_bdf and p.state == "ACTIVE" and (p.link_layer or "").lower() == "infiniband"
    }


def _interface(ctx: Context, i: Interface, up: float | None, ib_port: str | None) -> Outcome:
    downs = i.carrier_down_count
    if downs is None and i.carrier_changes is not None:
        downs = i.carrier_changes // 2  # kernels before 4.16 count changes only
    ev: dict[str, Any] = {
        "operstate": i.operstate,
        "carrier": i.carrier,
        "speed_mbps": i.speed_mbps,
        "link_kind": i.link_kind,
        "driver": i.driver,
        "pci_bdf": i.pci_bdf,
        "carrier_down_count": downs,
        "uptime": describe_uptime(up),
    }
    if i.carrier is None:
        why = ctx.network.unread.get(f"{i.name}.carrier", "not reported")
        if why.startswith("not supported (interface is down)") and ib_port:
            lost = f" after {downs} carrier losses" if downs else ""
            return failed(
                i.subject,
                f"IPoIB interface set down{lost} while its port {ib_port} is ACTIVE",
                remedy=f"Bring it up (ip link set {i.name} up), then find why it went down: "
                f"journalctl -u NetworkManager/systemd-networkd, dmesg | grep {i.name}; a "
                "link that keeps dropping needs its cable checked (mlxlink).",
                ib_port=ib_port,
                **ev,
            )
        if why.startswith("not supported (interface is down)"):
            return skipped(i.subject, "set down: not in use", **ev)
        return unknown(i.subject, f"carrier unreadable: {why}", **ev)
    if not i.carrier:
        return failed(i.subject, f"set up but no carrier (operstate {i.operstate})", **ev)
    limit = int(ctx.limit("downs_per_3h"))
    if downs is None:
        return passed(i.subject, "link up (no flap counter on this kernel)", **ev)
    proven = allowance(limit, THREE_HOURS_S, up)
    if proven is not None and downs >= proven:
        msg = f"{downs} link losses in {describe_uptime(up)} up: at least {limit} within 3 hours"
        return failed(i.subject, msg, **ev)
    if proven is None and downs >= limit:
        why = uptime_reason(ctx)
        return unknown(i.subject, f"{downs} link losses, uptime unknown ({why}): no rate", **ev)
    speed = f" at {i.speed_mbps / 1000:g} Gb/s" if i.speed_mbps else ""
    return passed(i.subject, f"link up{speed}, {downs} loss(es) since the driver loaded", **ev)
