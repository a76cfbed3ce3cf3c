"""Container facts: Docker and containerd runtimes, the NVIDIA Container Toolkit, CDI specs,
and which container tools are installed.

Sources: ``etc/docker/daemon.json``, ``etc/containerd/config.toml`` and its
``conf.d/*.toml`` drop-ins (nvidia-ctk writes ``99-nvidia.toml`` there),
``etc/nvidia-container-runtime/config.toml``, CDI specs in ``etc/cdi`` and
``var/run/cdi`` (``*.yaml``, ``*.yml``, ``*.json``), and ``<tool> --version``
for docker, containerd, podman, enroot, apptainer, singularity, nvidia-ctk and
nvidia-container-cli (tree keys ``docker%20--version``...).

CDI specs are YAML; PyYAML is not a dependency, so ``parse_cdi_spec`` reads the
three things dolmen needs (``kind``, ``cdiVersion``, device names) line by line
from the block style nvidia-ctk writes, and parses JSON specs with ``json``.

The dataclasses are in ``model``, the pure parsers in ``parse``; ``collect`` reads.
"""

from __future__ import annotations

from dolmen.compat import tomllib
from dolmen.facts.containers.model import (
    CdiSpec,
    ContainerdConfig,
    ContainerFacts,
    DockerConfig,
    Tool,
)
from dolmen.facts.containers.parse import (
    containerd_runtimes,
    parse_cdi_spec,
    parse_daemon_json,
    parse_tool_version,
)
from dolmen.facts.reading import absent, malformed, read_text
from dolmen.host import Host, RunStatus

__all__ = [
    "CDI_DIRS",
    "TOOLS",
    "CdiSpec",
    "ContainerFacts",
    "ContainerdConfig",
    "DockerConfig",
    "Tool",
    "collect",
    "containerd_runtimes",
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
        parse_cdi_spec(path, host.read_opt(path) or "")
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
    )


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
