"""PCIe links of non-GPU devices (NVMe, NVSwitches, switch uplinks...) below what both ends allow.

A link trains to the best speed and width both of its ends support, so a device's
own maximum is not the target: a Gen4 drive behind a Gen3 port runs at Gen3 by
design. The target is the lower of the device's maximum and its upstream port's
(``parent``); only when the parent is unknown is the device's own maximum used.

Whose link is it? An endpoint's link registers describe its upstream link. A bridge's
describe the link below it when it is a downstream port (root ports, switch
downstream ports) and the link above it when it is a switch's upstream port; sysfs
does not say which, but the tree does: counting bridges from a root port (which has
no parent), upstream ports sit at odd depths. Only those bridges are judged, so that
each link is judged once, from its lower end.

GPUs, and bridges whose only devices below are GPUs, are ``gpu.*``'s (a GPU's link
trains down at idle to save power); Mellanox NICs are ``interconnect.nic.pcie_limited``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, skipped, unknown, warned
from dolmen.facts.pci import PciDevice, PciLink, is_gpu, make_link
from dolmen.facts.reading import READ, source_state, unrecorded
from dolmen.values.busid import BusId, pci_subject

BRIDGE = "0604"
MELLANOX = "15b3"
# pci.ids class names lspci prints when it runs without -nn.
_NETWORK = frozenset({"Ethernet controller", "Infiniband controller", "Network controller"})


def _names(dev: PciDevice) -> tuple[str, str] | None:
    """lspci's class and device names (``3D controller``, ``NVIDIA Corporation Device 2330``)
    when the facts came from ``lspci -vvv`` without numeric ids; None otherwise."""
    if dev.description is None:
        return None
    cls, _, name = dev.description.partition(": ")
    return cls, name


def identified(dev: PciDevice) -> bool:
    """Whether the device's vendor and class are known (ids, else lspci's names)."""
    return (dev.vendor_id is not None and dev.class_id is not None) or _names(dev) is not None


def is_nic(dev: PciDevice) -> bool:
    """A network controller (class 02xx: Ethernet, InfiniBand...)."""
    if dev.class_id is not None:
        return dev.class_id.startswith("02")
    names = _names(dev)
    return names is not None and names[0] in _NETWORK


def is_mellanox_nic(dev: PciDevice) -> bool:
    """A Mellanox/NVIDIA ConnectX or BlueField network function."""
    if dev.vendor_id is not None:
        return dev.vendor_id == MELLANOX and is_nic(dev)
    names = _names(dev)
    return names is not None and names[1].startswith("Mellanox") and is_nic(dev)


def is_bridge(dev: PciDevice) -> bool:
    """A PCI-to-PCI bridge: a root port or a switch port."""
    if dev.class_id is not None:
        return dev.class_id == BRIDGE
    names = _names(dev)
    return names is not None and names[0] == "PCI bridge"


def target(dev: PciDevice, devices: Mapping[str, PciDevice]) -> PciLink | None:
    """The link the device should run at: the lower of its and its parent's maxima."""
    top = dev.max_link
    parent = devices.get(dev.parent or "")
    above = parent.max_link if parent is not None else None
    if top is None or above is None or parent is None or not is_bridge(parent):
        return top
    return make_link(_low(top.speed_gts, above.speed_gts), _low(top.width, above.width))


def shortfall(cur: PciLink | None, want: PciLink | None) -> list[str] | None:
    """What the current link lacks against the wanted one (empty: nothing); None if unreadable."""
    if cur is None or want is None:
        return None
    out: list[str] = []
    if cur.speed_gts is not None and want.speed_gts is not None and cur.speed_gts < want.speed_gts:
        out.append(f"{cur.speed_gts:g} GT/s < {want.speed_gts:g} GT/s")
    if cur.width is not None and want.width is not None and cur.width < want.width:
        out.append(f"x{cur.width} < x{want.width}")
    if cur.speed_gts is None and cur.width is None:
        return None
    return out


def describe(link: PciLink | None) -> str | None:
    """``Gen5 x16 (32 GT/s)`` for evidence."""
    if link is None:
        return None
    gen = f"Gen{link.generation} " if link.generation else ""
    speed = f" ({link.speed_gts:g} GT/s)" if link.speed_gts is not None else ""
    return f"{gen}x{link.width if link.width is not None else '?'}{speed}"


def _low(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else min(a, b)


def _depth(dev: PciDevice, devices: Mapping[str, PciDevice]) -> int | None:
    """Bridges between the device and its root port; None when the chain is not known."""
    depth, seen = 0, {dev.bdf}
    cur = dev
    while cur.parent is not None:
        nxt = devices.get(cur.parent)
        if nxt is None or nxt.bdf in seen:
            return None
        seen.add(nxt.bdf)
        depth, cur = depth + 1, nxt
    return depth


def gpu_only_below(bridge: PciDevice, devices: Mapping[str, PciDevice]) -> bool:
    """Whether every device below ``bridge`` is a GPU (its links are gpu.pcie.link's)."""
    children = [d for d in devices.values() if d.parent == bridge.bdf]
    return bool(children) and all(
        is_gpu(c) or (is_bridge(c) and gpu_only_below(c, devices)) for c in children
    )


def slot(bdf: str) -> str:
    """``0000:9d:00`` of ``0000:9d:00.1`` (any spelling): the functions of one slot share
    its link. A name that is not a bus id (``unknown``) is its own slot."""
    bus = BusId.parse(bdf)
    return bus.sysfs.rsplit(".", 1)[0] if bus else bdf


def first_per_slot(devs: list[PciDevice]) -> list[PciDevice]:
    """One function per slot (the lowest), so a shared link is judged once."""
    chosen: dict[str, PciDevice] = {}
    for d in sorted(devs, key=lambda d: d.bdf):
        chosen.setdefault(slot(d.bdf), d)
    return list(chosen.values())


def owned(devices: Mapping[str, PciDevice]) -> list[PciDevice]:
    """The devices whose link ``system.pcie.downgraded`` judges (see module docstring).

    A slot holding a GPU or a Mellanox NIC is left out whole: its other functions (the
    GPU's audio function, a BlueField's DMA engine) share that link.
    """
    others = {slot(d.bdf) for d in devices.values() if is_gpu(d) or is_mellanox_nic(d)}
    mine: list[PciDevice] = []
    for dev in devices.values():
        if slot(dev.bdf) in others or dev.max_link is None or not identified(dev):
            continue  # unidentified: it could be a GPU, whose idle link trains down
        if is_bridge(dev):
            depth = _depth(dev, devices)
            if depth is None or depth % 2 == 0 or gpu_only_below(dev, devices):
                continue
        mine.append(dev)
    return first_per_slot(mine)


@check(
    "system.pcie.downgraded",
    title="NVMe, NVSwitch, bridge and other non-GPU PCIe links run at what both ends allow",
    level=Level.QUICK,
    needs=("pci",),
    remedy=(
        "Compare lspci -vvv -s <bdf> LnkCap and LnkSta; reseat the card or the riser/cable, "
        "check the slot's bifurcation and Gen settings in the BIOS, and look for AER errors on "
        "the link (system.pcie.aer)."
    ),
    source="PCIe link training (the lower end's capability); GCM check_pci manifest practice",
)
def downgraded(ctx: Context) -> list[Outcome]:
    """Reads current and maximum link of each non-GPU device and of its upstream port."""
    devices = ctx.pci.by_bdf()
    mine = owned(devices)
    why = ctx.pci.unread.get("devices")
    if not devices and why and source_state(why) != READ:  # the bus was not read: not known
        if unrecorded(why):
            return [skipped("host", f"the PCI devices: {why}", reason=why)]
        return [unknown("host", f"the PCI devices could not be read: {why}", reason=why)]
    if not mine:
        return [skipped("host", "no non-GPU PCIe link to judge (GPUs: gpu.*; NICs: interconnect)")]
    unknown_parent = "parent" in ctx.pci.unread  # lspci -vvv alone: no tree of the bus
    out: list[Outcome] = []
    fine: list[str] = []
    blind: list[str] = []
    for dev in mine:
        want = target(dev, devices)
        lack = shortfall(dev.current_link, want)
        ev = {
            "vendor": dev.vendor_id,
            "class": dev.class_id,
            "description": dev.description,
            "driver": dev.driver,
            "current": describe(dev.current_link),
            "target": describe(want),
        }
        subject = pci_subject(dev.bdf)
        if lack is None:
            why = ctx.pci.unread.get(f"{dev.bdf}.current_link", "not reported")
            out.append(unknown(subject, f"current link unreadable: {why}", **ev))
        elif lack and (unknown_parent or f"{dev.bdf}.parent" in ctx.pci.unread):
            blind.append(f"{dev.bdf} ({', '.join(lack)})")  # maybe the slot's own limit
        elif lack:
            out.append(warned(subject, f"link below what both ends allow: {', '.join(lack)}", **ev))
        else:
            fine.append(dev.bdf)
    if blind:
        msg = (
            f"{len(blind)} link(s) below the device's maximum, upstream port unknown (lspci "
            "alone has no bus tree): the slot may be the limit"
        )
        out.append(skipped("host", msg, devices=blind))
    if fine:
        msg = f"{len(fine)} non-GPU link(s) at what both ends allow"
        out.append(passed("host", msg, devices=fine))
    return out
