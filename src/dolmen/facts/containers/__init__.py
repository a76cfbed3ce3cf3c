"""Container facts: Docker, containerd and CRI-O runtimes, the NVIDIA Container Toolkit,
CDI specs, and which container tools are installed.

Sources: ``etc/docker/daemon.json``, ``etc/containerd/config.toml`` and its
``conf.d/*.toml`` drop-ins (nvidia-ctk writes ``99-nvidia.toml`` there),
``etc/crio/crio.conf`` and ``crio.conf.d/*`` (TOML),
``etc/nvidia-container-runtime/config.toml``, CDI specs in ``etc/cdi`` and
``var/run/cdi`` (``*.yaml``, ``*.yml``, ``*.json``), and ``<tool> --version``
for docker, containerd, podman, enroot, apptainer, singularity, nvidia-ctk and
nvidia-container-cli (tree keys ``docker%20--version``...).

CDI specs are read with PyYAML (``cdi.py``): device names, device nodes, mounts and
the driver version the spec was generated for.

The dataclasses are in ``model``, the pure parsers in ``parse`` and ``cdi``;
``collect`` reads.
"""

from __future__ import annotations

import dataclasses

from dolmen.compat import tomllib
from dolmen.facts.containers.cdi import parse_cdi_spec
from dolmen.facts.containers.model import (
    CdiSpec,
    ContainerdConfig,
    ContainerFacts,
    CrioConfig,
    DockerConfig,
    Tool,
)
from dolmen.facts.containers.parse import (
    containerd_runtimes,
    crio_runtimes,
    parse_daemon_json,
    parse_tool_version,
)
from dolmen.facts.reading import absent, malformed, read_text, unrecorded
from dolmen.host import Host, RunStatus

__all__ = [
    "CDI_DIRS",
    "TOOLS",
    "CdiSpec",
    "ContainerFacts",
    "ContainerdConfig",
    "CrioConfig",
    "DockerConfig",
    "Tool",
    "collect",
    "containerd_runtimes",
    "crio_runtimes",
    "parse_cdi_spec",
    "parse_daemon_json",
    "parse_tool_version",
]

TOOLS = (
    "docker",
    "containerd",
    "podman",
    "enroot",
    "apptainer",
    "singularity",
    "nvidia-ctk",
    "nvidia-container-cli",
)

CDI_DIRS = ("etc/cdi", "var/run/cdi")

_CDI_SUFFIXES = (".yaml", ".yml", ".json")


def collect(host: Host) -> ContainerFacts:
    """Read and parse the container runtimes of ``host``."""
    unread: dict[str, str] = {}
    docker = None
    r = read_text(host, "etc/docker/daemon.json")
    if r.text is None:
        unread["docker"] = f"{r.reason}: etc/docker/daemon.json"
    elif (docker := parse_daemon_json(r.text)) is None:
        unread["docker"] = malformed(r.text)
    containerd = _containerd(host, unread)
    crio = _crio(host, unread)
    toolkit_config = mode = None
    r = read_text(host, "etc/nvidia-container-runtime/config.toml")
    if r.text is None:
        unread["toolkit_config"] = f"{r.reason}: etc/nvidia-container-runtime/config.toml"
        unread["toolkit_mode"] = unread["toolkit_config"]
    else:
        toolkit_config = "etc/nvidia-container-runtime/config.toml"
        mode = _toolkit_mode(r.text)
        if mode is None:
            unread["toolkit_mode"] = "missing: no [nvidia-container-runtime] mode (or malformed)"
    specs = tuple(
        _against_host(host, parse_cdi_spec(path, host.read_opt(path) or ""))
        for folder in CDI_DIRS
        for path in host.glob(f"{folder}/*")
        if path.endswith(_CDI_SUFFIXES)
    )
    if not specs and all(host.absent(f) != "missing" for f in CDI_DIRS):
        # No spec folder recorded at all: "no spec" would be a guess.
        unread["cdi_specs"] = absent(host, CDI_DIRS[0])
    return ContainerFacts(
        docker=docker,
        containerd=containerd,
        toolkit_config=toolkit_config,
        toolkit_mode=mode,
        cdi_specs=specs,
        tools={name: _tool(host, name) for name in TOOLS},
        unread=unread,
        crio=crio,
    )


def _against_host(host: Host, spec: CdiSpec) -> CdiSpec:
    """The spec with the device nodes and files it names that this host lacks: a spec
    generated before a driver update mounts libraries that are gone."""
    missing: list[str] = []
    unseen: list[str] = []
    for path in (*spec.device_nodes, *spec.mounts):
        rel = path.lstrip("/")
        if not rel or host.exists(rel):
            continue
        (unseen if unrecorded(absent(host, rel)) else missing).append(path)
    if not missing and not unseen:
        return spec
    return dataclasses.replace(spec, missing=tuple(missing), unseen=tuple(unseen))


def _containerd(host: Host, unread: dict[str, str]) -> ContainerdConfig | None:
    files = [p for p in ["etc/containerd/config.toml"] if host.exists(p)]
    files += host.glob("etc/containerd/conf.d/*.toml")
    if not files:
        unread["containerd"] = absent(host, "etc/containerd/config.toml")
        return None
    names: list[str] = []
    default = None
    for path in files:
        try:
            doc = tomllib.loads(host.read(path))
        except (OSError, tomllib.TOMLDecodeError) as e:
            unread["containerd"] = f"malformed: {path} ({e})"
            return None
        found, dflt = containerd_runtimes(doc)
        names.extend(n for n in found if n not in names)
        default = dflt or default  # drop-ins are merged after the main file
    return ContainerdConfig(tuple(files), tuple(names), default)


def _crio(host: Host, unread: dict[str, str]) -> CrioConfig | None:
    files = [p for p in ["etc/crio/crio.conf"] if host.exists(p)]
    files += sorted(host.glob("etc/crio/crio.conf.d/*"))
    if not files:
        unread["crio"] = absent(host, "etc/crio/crio.conf")
        return None
    runtimes: dict[str, str] = {}
    default = None
    for path in files:  # CRI-O reads the drop-ins in lexical order, each overriding
        try:
            doc = tomllib.loads(host.read(path))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            unread["crio"] = f"malformed: {path} ({e})"
            return None
        found, dflt = crio_runtimes(doc)
        runtimes.update(found)
        default = dflt or default
    return CrioConfig(tuple(files), runtimes, default)


def _toolkit_mode(text: str) -> str | None:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    section = doc.get("nvidia-container-runtime")
    mode = section.get("mode") if isinstance(section, dict) else None
    return mode if isinstance(mode, str) else None


def _tool(host: Host, name: str) -> Tool:
    res = host.run([name, "--version"])
    if res.status is RunStatus.MISSING:
        return Tool(False, None, res.reason or "not installed")
    if res.status in (RunStatus.TIMEOUT, RunStatus.DENIED, RunStatus.UNRECORDED):
        return Tool(None, None, res.failure())
    out = res.stdout.strip() or res.stderr.strip()
    first = out.splitlines()[0] if out else ""
    if not res.ok:
        return Tool(True, parse_tool_version(out), res.failure())
    return Tool(True, parse_tool_version(out), first)
