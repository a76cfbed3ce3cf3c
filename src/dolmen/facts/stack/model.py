"""The software-stack model: what the parsers return and what ``collect`` builds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from dolmen.frozen import frozen


@frozen
class KernelDriver:
    """The loaded NVIDIA kernel driver as /proc/driver/nvidia/version states it."""

    version: str
    flavour: str  # "open" (open GPU kernel modules) | "proprietary"


@frozen
class LoadedModule:
    """One line of /proc/modules."""

    name: str
    size: int
    refcount: int
    used_by: tuple[str, ...]
    state: str  # Live | Loading | Unloading
    taints: str  # the letters between parentheses ("POE"), "" when none


@frozen
class CachedLibrary:
    """One entry of the dynamic linker cache (``ldconfig -p``)."""

    name: str  # the soname as cached: "libcuda.so.1"
    arch: str  # "libc6,x86-64", "libc6,AArch64"
    path: str  # absolute path on the host


@frozen
class NvccVersion:
    """What ``nvcc --version`` says: the toolkit release and the compiler's full version."""

    release: str  # "12.4"
    full: str  # "12.4.131"


@frozen
class StackLibrary:
    """A library of the stack in the linker cache, with the version its real file carries."""

    name: str  # soname as cached ("libcuda.so.1")
    path: str  # as cached, absolute
    version: str | None  # from the link's target ("libcuda.so.580.95.05" -> "580.95.05")


@frozen
class Component:
    """cuDNN, NCCL or TensorRT: the version, and the file it was read from."""

    version: str
    source: str  # host path of the header or library


@frozen
class Toolkit:
    """An installed CUDA toolkit folder."""

    path: str  # "usr/local/cuda-12.4"
    version: str | None
    version_source: str | None  # the file the version came from


@frozen
class BrokenLink:
    """A library link whose target does not exist on the host."""

    path: str
    target: str


@frozen
class EnvEntry:
    """One entry of a path-like environment variable and whether it exists on the host."""

    variable: str
    entry: str
    exists: bool | None  # None: a relative entry, which depends on the working directory


@frozen
class StackFacts:
    """What software stack the host runs; None fields have their reason in ``unread``."""

    driver_version: str | None
    driver_flavour: str | None  # "open" | "proprietary"
    module_version: str | None  # sys/module/nvidia/version
    modules: Mapping[str, bool] | None  # NVIDIA_MODULES -> loaded
    module_taints: Mapping[str, str]  # loaded NVIDIA module -> taint letters ("POE")
    libraries: tuple[StackLibrary, ...] | None
    userspace_versions: tuple[str, ...]  # driver versions in libnvidia-*.so.X.Y.Z names
    libcuda_version: str | None
    libnvidia_ml_version: str | None
    cudnn: Component | None
    nccl: Component | None
    tensorrt: Component | None
    toolkits: tuple[Toolkit, ...]
    cuda_default: str | None  # where usr/local/cuda points, as an absolute path
    nvcc_release: str | None
    nvcc_version: str | None
    broken_links: tuple[BrokenLink, ...]
    env: Mapping[str, str]  # the ENV_VARS that are set
    env_missing: tuple[EnvEntry, ...]  # entries of those variables that do not exist
    unread: Mapping[str, str] = field(default_factory=dict)
    libraries_source: str | None = None  # "ldconfig -p" | "etc/ld.so.cache"

    def driver_installed(self) -> str | None:
        """What shows that an NVIDIA driver is installed, in words, or None when nothing
        here does. None is not evidence that none is: the sources may not have been read
        (a bundle without the linker cache, proc/modules or proc/driver)."""
        if self.driver_version is not None:
            return f"driver {self.driver_version} loaded (proc/driver/nvidia/version)"
        if self.module_version is not None:
            return f"nvidia module {self.module_version} loaded (sys/module/nvidia/version)"
        if self.modules and self.modules.get("nvidia"):
            return "nvidia module loaded (proc/modules)"
        names = {lib.name for lib in self.libraries or ()}
        where = f"the linker cache ({self.libraries_source or 'ldconfig -p'})"
        version = self.libcuda_version or (
            self.userspace_versions[-1] if self.userspace_versions else None
        )
        of = f" of driver {version}" if version else ""
        for soname in ("libcuda.so.1", "libnvidia-ml.so.1"):
            if soname in names:
                return f"{soname}{of} in {where}"
        if self.userspace_versions:
            return f"libnvidia-*.so.{self.userspace_versions[-1]} in {where}"
        return None
