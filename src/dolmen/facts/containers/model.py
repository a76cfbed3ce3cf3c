"""The container model: tools, Docker and containerd configuration, CDI specs, the facts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from dolmen.frozen import frozen


@frozen
class Tool:
    """A container tool: installed or not, and the version it reports."""

    installed: bool | None  # None: it could not be run (timeout, permissions, not in the bundle)
    version: str | None
    detail: str  # the first line it printed, or why it is absent


@frozen
class DockerConfig:
    """What ``etc/docker/daemon.json`` says about runtimes."""

    default_runtime: str | None
    runtimes: Mapping[str, str]  # name -> path of the runtime binary ("" when not given)
    cdi: bool | None = None  # "features": {"cdi": true} (Docker 25+; the default from 28.2)

    @property
    def nvidia_default(self) -> bool:
        """Whether every container gets the NVIDIA runtime without asking for it."""
        return self.default_runtime == "nvidia"


@frozen
class ContainerdConfig:
    """Runtimes declared in containerd's configuration (main file and drop-ins)."""

    files: tuple[str, ...]
    runtimes: tuple[str, ...]
    default_runtime: str | None


@frozen
class CrioConfig:
    """Runtimes declared in CRI-O's configuration (crio.conf and its drop-ins)."""

    files: tuple[str, ...]
    runtimes: Mapping[str, str]  # name -> runtime_path ("" when not given)
    default_runtime: str | None


@frozen
class CdiSpec:
    """One CDI spec file; ``error`` says why it is unusable (truncated, no kind...)."""

    path: str
    kind: str | None
    cdi_version: str | None
    devices: tuple[str, ...]
    error: str | None = None
    driver_version: str | None = None  # the driver it was generated for, when it names one
    device_nodes: tuple[str, ...] = ()  # host device nodes it hands out (/dev/nvidia0...)
    mounts: tuple[str, ...] = ()  # host files it bind-mounts
    library_versions: tuple[str, ...] = ()  # driver versions in its lib*.so.X.Y.Z mounts
    missing: tuple[str, ...] = ()  # device nodes and mounted files the host vouches are gone
    unseen: tuple[str, ...] = ()  # those the bundle did not record (neither there nor gone)


@frozen
class ContainerFacts:
    """Container runtimes and their NVIDIA integration; None fields have reasons in ``unread``."""

    docker: DockerConfig | None
    containerd: ContainerdConfig | None
    toolkit_config: str | None  # path of the NVIDIA Container Runtime config.toml
    toolkit_mode: str | None  # its [nvidia-container-runtime] mode (auto | legacy | cdi | csv)
    cdi_specs: tuple[CdiSpec, ...]
    tools: Mapping[str, Tool]
    unread: Mapping[str, str] = field(default_factory=dict)
    crio: CrioConfig | None = None
