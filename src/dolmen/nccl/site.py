"""The NCCL environment of a host, read once: for ``dolmen nccl env`` and for launches.

``launch_env(host)`` is the one place ``containers run``, the local jobs backend and the
Slurm batch script get NCCL's variables from: the computed values where the site has no
/etc/nccl.conf, nothing where it has one (NCCL reads that file itself, and a site that
wrote one meant it) or where the host has no NVIDIA GPU (checked first, from the PCI
functions' ``vendor`` and ``class`` files alone: most launches on a CPU host then pay
for nothing else).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dolmen.host import Host
from dolmen.nccl import NCCL_CONF, TOPO_FILE

if TYPE_CHECKING:
    from dolmen.facts.topology import HostTopology
    from dolmen.nccl.env import NcclEnv

_DEVICES = "sys/bus/pci/devices"


def compute(
    host: Host,
    topo: HostTopology | None = None,
    topo_file: str | None = None,
    *,
    inventory: bool = False,
) -> tuple[HostTopology, NcclEnv]:
    """The topology and the environment of ``host``; NCCL_TOPO_FILE is ``topo_file`` or
    the file ``nccl env --write`` leaves, where it exists. The variables need no GPU
    inventory (``collect_tree``'s ``inventory``); the topology file does."""
    from dolmen.facts import network
    from dolmen.facts.network import parse_default_route
    from dolmen.facts.topology import collect_tree
    from dolmen.nccl.env import nccl_env

    tree = topo if topo is not None else collect_tree(host, inventory=inventory)
    nets = network.collect(host)
    route = parse_default_route(host.read_opt("proc/net/route") or "")
    written = f"/{TOPO_FILE}" if host.exists(TOPO_FILE) else None
    return tree, nccl_env(
        tree, nets.interfaces, route, topo_file or written, nets.unread.get("interfaces", "")
    )


def has_nvidia_gpu(host: Host) -> bool:
    """Whether a PCI function of ``host`` is an NVIDIA display or 3D controller."""
    for name in host.listdir(_DEVICES):
        vendor = (host.read_opt(f"{_DEVICES}/{name}/vendor") or "").strip()
        if vendor == "0x10de":
            cls = (host.read_opt(f"{_DEVICES}/{name}/class") or "").strip()
            if cls.startswith("0x03"):
                return True
    return False


def launch_env(host: Host) -> dict[str, str]:
    """The NCCL variables a launch passes (module docstring)."""
    if host.exists(NCCL_CONF) or not has_nvidia_gpu(host):
        return {}
    return compute(host)[1].values()
