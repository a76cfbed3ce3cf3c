"""What a launch depends on, read once from a host: the runtimes installed, the NVIDIA
CDI devices, RDMA devices, /etc/nccl.conf (or, without it, the NCCL environment of this
fabric: ``nccl.site.launch_env``), this process's hard limits, Slurm and pyxis, and the
caller's compile caches (the variables tune's ``[caches]`` sets at login).

``gather(host)`` reads (through the host layer and the container facts); ``Site`` is
plain data, so ``plan.py`` is a pure function of it and the tests build one by hand.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from dolmen.host import Host
from dolmen.nccl import NCCL_CONF, TOPO_FILE  # both mounted read-only where present
from dolmen.workloads.caches import CACHE_VALUES, CACHES

RUNTIMES = ("docker", "podman", "apptainer", "singularity", "enroot", "pyxis")

# What /dev/infiniband holds for verbs, the RDMA CM and the management datagrams
# (uverbs0, rdma_cm, umad0, issm0); GDRCopy's node is /dev/gdrdrv.
_RDMA = ("dev/infiniband",)
_GDRCOPY = "dev/gdrdrv"
_LIMIT_RE = re.compile(r"^Max (locked memory|stack size|open files|processes)\s+(\S+)\s+(\S+)")
_LIMIT_NAMES = {
    "locked memory": "memlock",
    "stack size": "stack",
    "open files": "nofile",
    "processes": "nproc",
}
UNLIMITED = -1


@dataclass(frozen=True)
class Site:
    """The host as a launch sees it."""

    installed: frozenset[str]  # runtimes whose --version ran (pyxis: its SPANK plugin)
    cdi_devices: tuple[str, ...] = ()  # "nvidia.com/gpu=all", "nvidia.com/gpu=0"...
    cdi_specs: tuple[str, ...] = ()  # the spec files they come from
    docker_cdi: bool | None = None  # daemon.json "features": {"cdi": ...}
    rdma_devices: tuple[str, ...] = ()  # /dev/infiniband/uverbs0 ..., /dev/gdrdrv
    nccl_conf: bool = False  # /etc/nccl.conf exists
    nccl_topo: bool = False  # /etc/nccl-topo.xml exists (NCCL_TOPO_FILE of nccl env --write)
    nccl_env: Mapping[str, str] = field(default_factory=dict)  # without nccl.conf: computed
    hard_limits: Mapping[str, int] = field(default_factory=dict)  # name -> hard (-1: unlimited)
    in_slurm: bool = False  # inside a Slurm allocation (SLURM_JOB_ID)
    can_raise_limits: bool | None = None  # CAP_SYS_RESOURCE in this process's CapEff
    caches: tuple[tuple[str, str], ...] = ()  # (variable, value): compile caches to carry in


_CAP_SYS_RESOURCE = 24
# Compile caches: folder variable -> its name under the container's cache mount (the table
# tune's [caches] exports from: workloads/caches.py).
CACHE_FOLDERS = {var: name for name, var in CACHES.items()}


def _caches(host: Host, env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The caller's cache folder variables whose folder exists, or whose parent does when
    the folder has its usual name (tune's ``<root>/<uid>/cuda``, made at first use)."""
    found = []
    for var, name in CACHE_FOLDERS.items():
        path = env.get(var, "").rstrip("/")
        rel = path.lstrip("/")
        if not path.startswith("/") or not rel or any(c in path for c in ":,\n"):
            continue  # not a folder a bind mount can name
        parent, _, base = rel.rpartition("/")
        if host.is_dir(rel) or (base == name and parent and host.is_dir(parent)):
            found.append((var, path))
    if found:
        found += [(var, env[var]) for var in CACHE_VALUES if env.get(var)]
    return tuple(found)


def parse_cap_sys_resource(status: str) -> bool | None:
    """Whether ``/proc/<pid>/status``'s CapEff holds CAP_SYS_RESOURCE (None: no CapEff)."""
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            try:
                return bool(int(line.split(":", 1)[1].strip(), 16) >> _CAP_SYS_RESOURCE & 1)
            except ValueError:
                return None
    return None


def parse_limits(text: str) -> dict[str, int]:
    """Hard limits of ``/proc/<pid>/limits`` (memlock, stack, nofile, nproc); -1 = unlimited."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        m = _LIMIT_RE.match(line)
        if m is None:
            continue
        hard = m[3]
        if hard == "unlimited":
            out[_LIMIT_NAMES[m[1]]] = UNLIMITED
        elif hard.isdigit():
            out[_LIMIT_NAMES[m[1]]] = int(hard)
    return out


def _pyxis(host: Host) -> bool:
    """Whether Slurm loads pyxis (``required spank_pyxis.so`` in plugstack.conf or .d)."""
    files = ["etc/slurm/plugstack.conf", *host.glob("etc/slurm/plugstack.conf.d/*")]
    return any("spank_pyxis.so" in (host.read_opt(f) or "") for f in files)


def _on_path(host: Host, name: str, path: str) -> bool:
    return any(host.exists(f"{d.strip('/')}/{name}") for d in path.split(":") if d.startswith("/"))


def _cdi(host: Host) -> tuple[list[str], list[str]]:
    """NVIDIA GPU devices ("nvidia.com/gpu=all"...) of the usable CDI specs, and the specs."""
    from dolmen.facts.containers import CDI_DIRS, parse_cdi_spec

    devices: list[str] = []
    specs: list[str] = []
    for folder in CDI_DIRS:
        for path in sorted(host.glob(f"{folder}/*")):
            if not path.endswith((".yaml", ".yml", ".json")):
                continue
            spec = parse_cdi_spec(path, host.read_opt(path) or "")
            if spec.error or spec.kind != "nvidia.com/gpu":
                continue
            specs.append(f"/{path}")
            devices += [
                f"{spec.kind}={d}" for d in spec.devices if f"{spec.kind}={d}" not in devices
            ]
    return devices, specs


def gather(host: Host) -> Site:
    """Read what a launch depends on from ``host``: runtimes found on the PATH (no
    ``--version`` runs: a dry run stays well under a tenth of a second), the CDI specs,
    the RDMA nodes, /etc/nccl.conf and this process's hard limits."""
    from dolmen.facts.containers import parse_daemon_json

    env = host.environ()
    path = env.get("PATH") or "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    installed = {name for name in RUNTIMES[:-1] if _on_path(host, name, path)}
    if "enroot" in installed and _pyxis(host):
        installed.add("pyxis")
    devices, specs = _cdi(host)
    rdma: list[str] = []
    for folder in _RDMA:
        if host.is_dir(folder):
            rdma.extend(f"/{folder}/{name}" for name in sorted(host.listdir(folder)))
    if host.exists(_GDRCOPY):
        rdma.append(f"/{_GDRCOPY}")
    from dolmen.nccl.site import launch_env

    daemon = host.read_opt("etc/docker/daemon.json")
    docker = None if daemon is None else parse_daemon_json(daemon)
    return Site(
        installed=frozenset(installed),
        cdi_devices=tuple(devices),
        cdi_specs=tuple(specs),
        docker_cdi=None if docker is None else docker.cdi,
        rdma_devices=tuple(rdma),
        nccl_conf=host.exists(NCCL_CONF),
        nccl_topo=host.exists(TOPO_FILE),
        nccl_env=launch_env(host),
        hard_limits=parse_limits(host.read_opt("proc/self/limits") or ""),
        in_slurm=bool(env.get("SLURM_JOB_ID")),
        can_raise_limits=parse_cap_sys_resource(host.read_opt("proc/self/status") or ""),
        caches=_caches(host, env),
    )
