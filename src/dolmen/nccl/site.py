"""The NCCL environment of a host, read once: for ``dolmen nccl env`` and for launches.

``launch_env(host)`` is the one place ``containers run``, the local jobs backend and the
Slurm batch script get NCCL's variables from: the computed values where the site has no
/etc/nccl.conf, nothing where it has one (NCCL reads that file itself, and a site that
wrote one meant it).
"""

from __future__ import annotations

from dolmen.facts import network
from dolmen.facts.network import parse_default_route
from dolmen.facts.topology import HostTopology, collect_tree
from dolmen.host import Host
from dolmen.nccl import NCCL_CONF, TOPO_FILE
from dolmen.nccl.env import NcclEnv, nccl_env


def compute(
    host: Host, topo: HostTopology | None = None, topo_file: str | None = None
) -> tuple[HostTopology, NcclEnv]:
    """The topology and the environment of ``host``; NCCL_TOPO_FILE is ``topo_file`` or
    the file ``nccl env --write`` leaves, where it exists."""
    tree = topo if topo is not None else collect_tree(host)
    nets = network.collect(host)
    route = parse_default_route(host.read_opt("proc/net/route") or "")
    written = f"/{TOPO_FILE}" if host.exists(TOPO_FILE) else None
    return tree, nccl_env(
        tree, nets.interfaces, route, topo_file or written, nets.unread.get("interfaces", "")
    )


def launch_env(host: Host) -> dict[str, str]:
    """The NCCL variables a launch passes: none where /etc/nccl.conf exists (module
    docstring) or the host shows no GPU (no NCCL to tell), else every computed value."""
    if host.exists(NCCL_CONF):
        return {}
    tree, env = compute(host)
    return env.values() if tree.gpus else {}
