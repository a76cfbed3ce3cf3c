"""What a stack lock holds: components, each with its version and where it came from.

A component is one piece of the validated stack (the kernel, the driver, one CUDA
toolkit, NCCL, one GPU's VBIOS...). It is either *known* (``version`` set, with the
``source`` it was read from, the packages that installed it and the hashes of the files
it was read from) or *unknown* (``version`` None and a ``reason``). There is no
"absent": a host that does not show a component says why (DESIGN.md: absence of a
source is not evidence of absence); the reason's first word tells a missing component
the host vouches for (``missing``) from one it simply does not show.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SCHEMA = "dolmen.stack.lock/1"

# Component kinds, in the order a lock lists them.
KINDS = (
    "kernel",
    "driver",
    "module",
    "cuda",
    "cudnn",
    "nccl",
    "tensorrt",
    "container-toolkit",
    "fabric-manager",
    "dcgm",
    "doca",
    "vbios",
    "nic-firmware",
)


@dataclass(frozen=True)
class Package:
    """An installed package as its manager's database states it."""

    name: str
    version: str  # the full version, epoch and revision included ("1:3.3.5", "550.54.15-1")
    manager: str  # apt | dnf
    held: bool = False  # dpkg selection "hold" (apt-mark hold), a dnf versionlock

    def to_json(self) -> dict[str, Any]:
        """A plain dict (the hold state is the plan's business, not the lock's)."""
        return {"name": self.name, "version": self.version, "manager": self.manager}


@dataclass(frozen=True)
class FileHash:
    """A file a component was read from, with its SHA-256."""

    path: str  # absolute, as on the host
    sha256: str

    def to_json(self) -> dict[str, Any]:
        """A plain dict."""
        return {"path": self.path, "sha256": self.sha256}


@dataclass(frozen=True)
class Component:
    """One component of the stack; see the module docstring."""

    id: str  # "driver", "cuda:/usr/local/cuda-12.4", "vbios:0000:9b:00.0", "nic-firmware:mlx5_0"
    kind: str  # one of KINDS
    version: str | None
    source: str = ""  # where the version was read: a host path, a command, "dpkg: <package>"
    reason: str = ""  # why the version is unknown (version None)
    details: Mapping[str, str] = field(default_factory=dict)  # branch, flavour, signer...
    packages: tuple[Package, ...] = ()
    files: tuple[FileHash, ...] = ()

    @property
    def known(self) -> bool:
        """Whether the host showed this component's version."""
        return self.version is not None

    @property
    def vouched_missing(self) -> bool:
        """Unknown because the host vouches it has none (its sources were read, none shows
        it), rather than because a source could not be read or was not recorded."""
        return not self.known and self.reason.startswith("missing")

    def to_json(self) -> dict[str, Any]:
        """A plain dict for the lock file and ``--json``."""
        doc: dict[str, Any] = {"kind": self.kind}
        if self.version is None:
            doc |= {"state": "unknown", "reason": self.reason}
        else:
            doc |= {"state": "known", "version": self.version, "source": self.source}
        if self.details:
            doc["details"] = dict(sorted(self.details.items()))
        if self.packages:
            doc["packages"] = [p.to_json() for p in self.packages]
        if self.files:
            doc["files"] = [f.to_json() for f in self.files]
        return doc


@dataclass(frozen=True)
class Lock:
    """The exact stack of one host (``dolmen stack lock``), or what a lock file holds."""

    host: str
    distribution: str | None  # os-release ID: ubuntu, debian, rhel, rocky...
    distribution_version: str | None  # VERSION_ID: 22.04, 9.4
    architecture: str | None  # x86_64, aarch64
    package_manager: str | None  # apt | dnf | None (neither database readable)
    components: tuple[Component, ...]
    gpu_architectures: tuple[str, ...] = ()  # Hopper, Blackwell: what the rules need
    notes: tuple[str, ...] = ()  # e.g. why the package database could not be read

    def by_id(self) -> dict[str, Component]:
        """Components by id."""
        return {c.id: c for c in self.components}

    def to_json(self) -> dict[str, Any]:
        """The ``dolmen.stack.lock/1`` document (the lock file's content as JSON)."""
        return {
            "schema": SCHEMA,
            "host": self.host,
            "distribution": self.distribution,
            "distribution_version": self.distribution_version,
            "architecture": self.architecture,
            "package_manager": self.package_manager,
            "gpu_architectures": list(self.gpu_architectures),
            "notes": list(self.notes),
            "components": {c.id: c.to_json() for c in self.components},
        }
