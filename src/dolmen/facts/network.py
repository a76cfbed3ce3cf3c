"""Network facts: every interface in ``sys/class/net`` with link state, speed, MTU, flaps.

Per interface: ``operstate``, ``carrier``, ``speed`` (Mb/s), ``duplex``, ``mtu``,
``type`` (the ARPHRD link type: 1 Ethernet, 32 InfiniBand/IPoIB, 772 loopback),
``address``, ``carrier_changes`` / ``carrier_up_count`` / ``carrier_down_count``
(flap counters since the driver loaded), and the driver and PCI address from
the ``sys/class/net/<if>`` link (``../../devices/pci0000:00/0000:0c:00.0/net/ib0``)
and ``device/driver``. Virtual interfaces (``devices/virtual/net``: lo, bridges,
veth, bonds) skip the files that only hardware has, so a node with hundreds of
container veths stays cheap to read.

The kernel refuses ``carrier`` and ``speed`` with EINVAL on an interface that is
down, and reports speed -1 when it does not know it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from dolmen.facts.reading import Read, malformed, parse_int, read_value
from dolmen.frozen import frozen
from dolmen.host import Host
from dolmen.host.command import NOT_IN_BUNDLE
from dolmen.values.busid import sysfs_name

CLASS = "sys/class/net"

# include/uapi/linux/if_arp.h
LINK_TYPES: Mapping[int, str] = {
    1: "ether",
    32: "infiniband",
    512: "ppp",
    768: "ipip",
    769: "tunnel6",
    772: "loopback",
    776: "sit",
    778: "gre",
    823: "ip6gre",
    65534: "none",  # tun, wireguard
}


@frozen
class Interface:
    """One interface (``nic:<name>``); a None field is in ``unread`` as ``<name>.<field>``."""

    name: str
    operstate: str | None  # up, down, unknown (lo), dormant, lowerlayerdown, notpresent
    carrier: bool | None
    speed_mbps: int | None
    duplex: str | None  # full, half
    mtu: int | None
    link_type: int | None  # ARPHRD number
    link_kind: str | None  # ether, infiniband, loopback, ...
    address: str | None
    virtual: bool | None  # None: the tree has no sysfs links to tell
    driver: str | None = None
    pci_bdf: str | None = None
    carrier_changes: int | None = None  # link flaps: up and down transitions
    carrier_up_count: int | None = None
    carrier_down_count: int | None = None

    @property
    def subject(self) -> str:
        """The finding subject: ``nic:ib0``."""
        return f"nic:{self.name}"


@frozen
class NetworkFacts:
    """Every network interface of the host."""

    interfaces: tuple[Interface, ...] = ()
    unread: Mapping[str, str] = field(default_factory=dict)

    def by_name(self) -> dict[str, Interface]:
        """Interfaces keyed by name."""
        return {i.name: i for i in self.interfaces}


def parse_carrier(text: str) -> bool | None:
    """``1`` / ``0`` -> True / False; anything else None."""
    return {"1": True, "0": False}.get(text.strip())


def parse_speed(text: str) -> int | None:
    """Mb/s; -1 (SPEED_UNKNOWN) and anything not a positive integer -> None."""
    value = parse_int(text)
    return value if value is not None and value > 0 else None


def parse_default_route(text: str) -> str | None:
    """The interface of the default IPv4 route in ``/proc/net/route`` (destination and mask
    00000000, the lowest metric), or None."""
    best: tuple[int, str] | None = None
    for line in text.splitlines()[1:]:
        cells = line.split()
        if len(cells) < 8 or cells[1] != "00000000" or cells[7] != "00000000":
            continue
        metric = int(cells[6]) if cells[6].isdigit() else 1 << 31
        if best is None or metric < best[0]:
            best = (metric, cells[0])
    return best[1] if best else None


def read_interface(host: Host, name: str, unread: dict[str, str]) -> Interface:
    """One interface from its ``sys/class/net/<name>`` folder."""
    base = f"{CLASS}/{name}"
    target = host.readlink(base)
    device = host.readlink(f"{base}/device")
    if target is not None:
        virtual: bool | None = "/virtual/" in target
    elif device is not None or host.exists(f"{base}/device"):
        virtual = False
    else:
        virtual = None
        unread[f"{name}.virtual"] = "missing (no sysfs links in this tree)"

    def value(fname: str) -> Read:
        return read_value(host, f"{base}/{fname}")

    operstate = value("operstate")
    down = operstate.text in ("down", "lowerlayerdown", "notpresent")

    def explain(attr: str, r: Read) -> None:
        # An empty value is how recorders (GCM) keep a file the kernel refused to read.
        refused = r.text == "" or r.reason.startswith("unreadable (Invalid argument")
        if r.text:
            unread[f"{name}.{attr}"] = malformed(r.text)
        elif refused and down:
            unread[f"{name}.{attr}"] = "not supported (interface is down)"
        elif refused and virtual:
            unread[f"{name}.{attr}"] = "not supported (virtual interface)"
        else:
            unread[f"{name}.{attr}"] = r.reason or "unreadable (empty)"

    if not operstate.text:
        explain("operstate", operstate)
    carrier_r = value("carrier")
    carrier = parse_carrier(carrier_r.text or "")
    if carrier is None:
        explain("carrier", carrier_r)
    ints: dict[str, int | None] = {}
    for attr in ("mtu", "type", "carrier_changes", "carrier_up_count", "carrier_down_count"):
        r = value(attr)
        ints[attr] = parse_int(r.text)
        if ints[attr] is None:
            explain(attr, r)
    address = value("address").text or None

    speed = duplex = driver = None
    if not virtual:
        r = value("speed")
        speed = parse_speed(r.text or "")
        if speed is None:
            if r.text is not None and r.text.strip() == "-1":
                why = "not supported (speed unknown: no link, or the driver reports none)"
                unread[f"{name}.speed_mbps"] = why
            else:
                explain("speed_mbps", r)
        d = value("duplex")
        duplex = d.text if d.text in ("full", "half") else None
        link = host.readlink(f"{base}/device/driver")
        driver = link.rsplit("/", 1)[-1] if link else None

    bdfs = [p for p in f"{target or ''}/{device or ''}".split("/") if sysfs_name(p)]
    link_type = ints["type"]
    return Interface(
        name=name,
        operstate=operstate.text or None,
        carrier=carrier,
        speed_mbps=speed,
        duplex=duplex,
        mtu=ints["mtu"],
        link_type=link_type,
        link_kind=LINK_TYPES.get(link_type) if link_type is not None else None,
        address=address,
        virtual=virtual,
        driver=driver,
        pci_bdf=bdfs[-1] if bdfs else None,
        carrier_changes=ints["carrier_changes"],
        carrier_up_count=ints["carrier_up_count"],
        carrier_down_count=ints["carrier_down_count"],
    )


def collect(host: Host) -> NetworkFacts:
    """Read and parse the network facts of ``host``."""
    unread: dict[str, str] = {}
    if not host.is_dir(CLASS):
        why = host.absent(CLASS)  # a pasted file says nothing of the host's interfaces
        unread["interfaces"] = (
            f"{why}: {CLASS}" if why == NOT_IN_BUNDLE else "missing (no sys/class/net on this host)"
        )
        return NetworkFacts((), unread)
    # bonding_masters is a file beside the interfaces, not one of them.
    names = [n for n in host.listdir(CLASS) if host.is_dir(f"{CLASS}/{n}")]
    return NetworkFacts(tuple(read_interface(host, n, unread) for n in names), unread)
