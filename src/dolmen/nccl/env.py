"""The NCCL environment for a host's fabric, each value with why: pure.

From the topology (``facts.topology.HostTopology``), the network interfaces and the
default route:

- NCCL_IB_HCA: the closest HCA of each GPU, in GPU order (ties: a NIC no earlier GPU
  took, an active port, the faster link), ``=`` so NCCL matches names exactly
  (``mlx5_1`` alone also selects mlx5_10..mlx5_19);
- NCCL_IB_GID_INDEX: on RoCE ports, the index of the RoCE v2 IPv4-mapped GID (one value
  for every HCA listed, or none when they differ);
- NCCL_SOCKET_IFNAME: the interface of the default route (bootstrap and the socket
  transport), never loopback, docker or other container/virtual bridges;
- NCCL_NET_GDR_LEVEL: PXB where every GPU has its NIC on its PCIe switch (GPUDirect
  RDMA within the switch, NCCL's default written down so a site file cannot lower it);
  left to NCCL where a GPU's NIC is across the CPU;
- NCCL_CROSS_NIC: left to NCCL (2): whether the fabric is rail-optimised is switch
  wiring no host shows;
- NCCL_TOPO_FILE: the file ``dolmen nccl topo`` wrote, where there is one.

A variable whose value cannot be established has value None and says why; only values
are exported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dolmen.facts.network import Interface
from dolmen.facts.topology.model import THROUGH_CPU, PathKind
from dolmen.facts.topology.tree_model import Device, HostTopology
from dolmen.frozen import frozen
from dolmen.frozen.regex import pattern

NAMES = (
    "NCCL_IB_HCA",
    "NCCL_IB_GID_INDEX",
    "NCCL_SOCKET_IFNAME",
    "NCCL_NET_GDR_LEVEL",
    "NCCL_CROSS_NIC",
    "NCCL_TOPO_FILE",
)
# Container, VM and overlay interfaces: never the node's own network.
_VIRTUAL = pattern(
    r"lo|docker\d*|veth.*|virbr.*|br-.*|cni.*|flannel.*|cali.*|vxlan.*|tun.*|tap.*|kube.*"
    r"|weave.*|podman.*|cilium.*|lxc.*|lxd.*|genev.*|nodelocaldns|dummy.*"
)
# A device or interface name NCCL can be given: what the kernel names them. A bundle's
# name with anything else (a newline, a control character, a comma or '=') would write
# lines or entries of its own into /etc/nccl.conf: such a device is never chosen.
_PLAIN = pattern(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")


def plain_name(name: str | None) -> bool:
    """Whether ``name`` is a device or interface name dolmen may hand to NCCL."""
    return name is not None and _PLAIN.fullmatch(name) is not None


@frozen
class Var:
    """One variable: its value (None: not set) and why."""

    name: str
    value: str | None
    why: str


@frozen
class NcclEnv:
    """The variables, in NAMES order."""

    variables: tuple[Var, ...]

    def values(self) -> dict[str, str]:
        """The variables that have a value."""
        return {v.name: v.value for v in self.variables if v.value is not None}

    def to_json(self) -> list[dict[str, Any]]:
        """For ``dolmen.nccl.env/1``."""
        return [{"name": v.name, "value": v.value, "why": v.why} for v in self.variables]


def nccl_env(
    topo: HostTopology,
    interfaces: Sequence[Interface],
    default_route: str | None,
    topo_file: str | None = None,
    interfaces_unread: str = "",
) -> NcclEnv:
    """The environment (module docstring)."""
    hca, chosen = _ib_hca(topo)
    return NcclEnv(
        (
            hca,
            _gid_index(chosen),
            _socket_ifname(interfaces, default_route, interfaces_unread),
            _gdr_level(topo),
            Var(
                "NCCL_CROSS_NIC",
                None,
                "left to NCCL (2): rail-optimised or not is the fabric's switch wiring, which"
                " no host shows; 0 where each NIC index has its own leaf switch, 1 where all"
                " NICs reach one switch",
            ),
            Var("NCCL_TOPO_FILE", topo_file, "written by dolmen nccl topo; NCCL reads it")
            if topo_file
            else Var(
                "NCCL_TOPO_FILE",
                None,
                "no topology file written (dolmen nccl topo -o FILE, or nccl env --write)",
            ),
        )
    )


def _rate(n: Device) -> float:
    port = max((p.rate_gbps or 0.0 for p in n.ports), default=0.0)
    return port or (n.link_speed_gts or 0.0) * (n.link_width or 0)


def _ib_hca(topo: HostTopology) -> tuple[Var, list[tuple[Device, int]]]:
    name = "NCCL_IB_HCA"
    named = [n for n in topo.nics if plain_name(n.name) and n.ports]
    if not named:
        unnamed = topo.unread.get("nic.names")
        if unnamed:
            return Var(name, None, f"{unnamed}: the HCAs' names are not known"), []
        why = "no RDMA device (sys/class/infiniband): NCCL uses its socket transport"
        return Var(name, None, why), []
    by = topo.by_label()
    chosen: list[tuple[Device, int]] = []
    notes: list[str] = []
    for g in topo.gpus:
        near = [by[x] for x in topo.closest_nics(g.label) if by[x] in named]
        if not near:
            why = f"{g.label} has no placed HCA (is each HCA's PCI function in this bundle?)"
            return Var(name, None, why), []
        taken = {n.label for n, _ in chosen}
        pick = min(
            near,
            key=lambda n: (
                n.label in taken,
                not any(p.state == "ACTIVE" for p in n.ports),
                -_rate(n),
                n.label,
            ),
        )
        port = next((p.port for p in pick.ports if p.state == "ACTIVE"), pick.ports[0].port)
        path = topo.path(g.label, pick.label)
        notes.append(f"{g.label} {pick.name} ({path})")
        if pick.label not in taken:
            chosen.append((pick, port))
    value = "=" + ",".join(f"{n.name}:{p}" for n, p in chosen)
    far = [x for x in notes if any(f"({k.value})" in x for k in THROUGH_CPU)]
    why = "the closest HCA of each GPU: " + ", ".join(notes)
    if far:
        why += "; across the CPU for " + ", ".join(x.split(" ")[0] for x in far)
    return Var(name, value, why + "; '=' matches names exactly"), chosen


def _gid_index(chosen: list[tuple[Device, int]]) -> Var:
    name = "NCCL_IB_GID_INDEX"
    roce = [
        (n, p)
        for n, port in chosen
        for p in n.ports
        if p.port == port and (p.link_layer or "").lower() == "ethernet"
    ]
    if not chosen:
        return Var(name, None, "no HCA chosen")
    if not roce:
        return Var(name, None, "InfiniBand link layer: no GID index to choose")
    missing = [f"{n.name}: {p.gid_note or 'not read'}" for n, p in roce if p.roce_v2_gid is None]
    if missing:
        return Var(name, None, "; ".join(missing))
    found = {p.roce_v2_gid for _, p in roce}
    listing = ", ".join(f"{n.name} {p.roce_v2_gid}" for n, p in roce)
    if len(found) != 1:
        return Var(name, None, f"the RoCE v2 IPv4 GID index differs between HCAs ({listing})")
    return Var(name, str(found.pop()), f"the RoCE v2 IPv4-mapped GID of every HCA ({listing})")


def virtual_name(name: str) -> bool:
    """Whether an interface name is loopback or a container/VM/overlay interface."""
    return _VIRTUAL.fullmatch(name) is not None


def _socket_ifname(interfaces: Sequence[Interface], route: str | None, unread: str) -> Var:
    name = "NCCL_SOCKET_IFNAME"
    by = {i.name: i for i in interfaces}
    interfaces = [i for i in interfaces if plain_name(i.name)]
    route = route if plain_name(route) else None
    if route and not virtual_name(route):
        return Var(name, f"={route}", f"{route} holds the default route (/proc/net/route)")
    up = [
        i
        for i in interfaces
        if not virtual_name(i.name) and i.operstate == "up" and i.link_kind == "ether"
    ]
    if up:
        pick = sorted(up, key=lambda i: (bool(i.virtual), i.name))[0]
        why = f"the first Ethernet interface that is up ({pick.name})"
        why += f"; the default route is on {route}, a virtual one" if route else ""
        return Var(name, f"={pick.name}", why)
    seen = (unread or "no interface read") if not by else "no Ethernet interface up"
    return Var(name, None, f"{seen}; NCCL picks one itself")


def _gdr_level(topo: HostTopology) -> Var:
    name = "NCCL_NET_GDR_LEVEL"
    if not topo.gpus or not any(n.root for n in topo.nics):
        return Var(name, None, "no GPU or no HCA: nothing to decide")
    kinds = []
    for g in topo.gpus:
        near = topo.closest_nics(g.label)
        p = topo.path(g.label, near[0]) if near else None
        if p is None:
            return Var(name, None, f"{g.label}'s closest HCA is not placed")
        kinds.append(p.kind)
    if all(k in (PathKind.PIX, PathKind.PXB) for k in kinds):
        why = "every GPU has an HCA on its PCIe switch: GPUDirect RDMA up to PXB"
        if topo.gdr is False:
            why += " (nvidia-peermem is not loaded: NCCL needs DMA-BUF for it)"
        return Var(name, "PXB", why)
    worst = max(kinds)
    return Var(name, None, f"a GPU's closest HCA is {worst.value}: NCCL's default keeps it off")
