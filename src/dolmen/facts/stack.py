"""Software-stack facts: NVIDIA driver and modules, user-space libraries, cuDNN, NCCL,
TensorRT, CUDA toolkits, broken library links and the CUDA environment variables.

Sources (parsers in ``dolmen.facts.stack_versions``): ``proc/driver/nvidia/version``,
``proc/modules``, ``sys/module/nvidia/version``, ``ldconfig -p`` (tree key
``ldconfig%20-p``) and the links it names, C headers under ``usr/include`` and the
toolkits' ``include`` folders, ``usr/local/cuda*`` (``version.json``,
``version.txt``, ``include/cuda.h``, the ``usr/local/cuda`` link), ``nvcc
--version`` and the host's environment (CUDA_HOME, CUDA_PATH, PATH, LD_LIBRARY_PATH).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from dolmen.facts.reading import malformed, read_text
from dolmen.facts.stack_versions import (
    CachedLibrary,
    parse_cuda_h,
    parse_cuda_version_json,
    parse_cuda_version_txt,
    parse_defines,
    parse_ldconfig,
    parse_nvcc_version,
    parse_nvrm_version,
    parse_proc_modules,
    soname_version,
    version_from_defines,
)
from dolmen.host import Host, RunStatus

# Modules of the NVIDIA stack worth reporting (GPUDirect RDMA: nvidia_peermem, gdrdrv;
# GPUDirect Storage: nvidia_fs).
NVIDIA_MODULES = (
    "nvidia",
    "nvidia_uvm",
    "nvidia_modeset",
    "nvidia_drm",
    "nvidia_peermem",
    "nvidia_fs",
    "gdrdrv",
)
# Library folders where a dangling link breaks CUDA applications.
LIBRARY_DIRS = (
    "usr/lib/x86_64-linux-gnu",
    "usr/lib/aarch64-linux-gnu",
    "usr/local/cuda*/lib64",
)
_STACK_LIB_RE = re.compile(r"^lib(cuda|nvidia-|cudnn|nccl|nvinfer|cublas)")
_HEADER_DIRS = (
    "usr/include",
    "usr/include/x86_64-linux-gnu",
    "usr/include/aarch64-linux-gnu",
    "usr/local/cuda*/include",
    "usr/local/cuda*/targets/*/include",
)
ENV_VARS = ("CUDA_HOME", "CUDA_PATH", "PATH", "LD_LIBRARY_PATH")


@dataclass(frozen=True)
class StackLibrary:
    """A library of the stack in the linker cache, with the version its real file carries."""

    name: str  # soname as cached ("libcuda.so.1")
    path: str  # as cached, absolute
    version: str | None  # from the link's target ("libcuda.so.580.95.05" -> "580.95.05")


@dataclass(frozen=True)
class Component:
    """cuDNN, NCCL or TensorRT: the version, and the file it was read from."""

    version: str
    source: str  # host path of the header or library


@dataclass(frozen=True)
class Toolkit:
    """An installed CUDA toolkit folder."""

    path: str  # "usr/local/cuda-12.4"
    version: str | None
    version_source: str | None  # the file the version came from


@dataclass(frozen=True)
class BrokenLink:
    """A library link whose target does not exist on the host."""

    path: str
    target: str


@dataclass(frozen=True)
class EnvEntry:
    """One entry of a path-like environment variable and whether it exists on the host."""

    variable: str
    entry: str
    exists: bool | None  # None: a relative entry, which depends on the working directory


@dataclass(frozen=True)
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


def collect(host: Host) -> StackFacts:
    """Read and parse the software stack of ``host``."""
    unread: dict[str, str] = {}
    driver_version = flavour = None
    r = read_text(host, "proc/driver/nvidia/version")
    if r.text is None:
        unread["driver_version"] = f"{r.reason}: proc/driver/nvidia/version (driver not loaded?)"
    elif (drv := parse_nvrm_version(r.text)) is None:
        unread["driver_version"] = malformed(r.text)
    else:
        driver_version, flavour = drv.version, drv.flavour
    if driver_version is None:
        unread["driver_flavour"] = unread["driver_version"]
    module_version = host.read_value("sys/module/nvidia/version") or None
    if module_version is None:
        unread["module_version"] = "missing: sys/module/nvidia/version (nvidia not loaded)"
    modules, taints = _modules(host, unread)
    libraries, userspace = _libraries(host, unread)
    by_name = {lib.name: lib for lib in libraries or ()}
    libcuda = _lib_version(by_name, "libcuda", unread, libraries is not None)
    libnvml = _lib_version(by_name, "libnvidia-ml", unread, libraries is not None)
    cudnn = _component(
        host,
        by_name,
        "libcudnn",
        ("cudnn_version.h", "cudnn.h"),
        ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"),
    )
    nccl = _component(
        host, by_name, "libnccl", ("nccl.h",), ("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH")
    )
    trt = _component(
        host,
        by_name,
        "libnvinfer",
        ("NvInferVersion.h",),
        ("NV_TENSORRT_MAJOR", "NV_TENSORRT_MINOR", "NV_TENSORRT_PATCH"),
    )
    for key, comp in (("cudnn", cudnn), ("nccl", nccl), ("tensorrt", trt)):
        if comp is None:
            unread[key] = "missing: no header or library found"
    toolkits = _toolkits(host)
    default = host.readlink("usr/local/cuda")
    if default is not None:  # absolute, so a snapshot's relative link reads the same
        default = posixpath.normpath(posixpath.join("/usr/local", default))
    else:
        unread["cuda_default"] = "missing: usr/local/cuda is not a link"
    nvcc_release = nvcc_full = None
    res = host.run(["nvcc", "--version"])
    if res.status is RunStatus.MISSING and host.exists("usr/local/cuda/bin/nvcc"):
        res = host.run(["/usr/local/cuda/bin/nvcc", "--version"])  # not on PATH
    if not res.ok:
        unread["nvcc_version"] = res.failure()
    elif (nv := parse_nvcc_version(res.stdout)) is None:
        unread["nvcc_version"] = malformed(res.stdout)
    else:
        nvcc_release, nvcc_full = nv.release, nv.full
    if nvcc_release is None:
        unread["nvcc_release"] = unread["nvcc_version"]
    env = {k: v for k, v in host.environ().items() if k in ENV_VARS}
    return StackFacts(
        driver_version=driver_version,
        driver_flavour=flavour,
        module_version=module_version,
        modules=modules,
        module_taints=taints,
        libraries=libraries,
        userspace_versions=userspace,
        libcuda_version=libcuda,
        libnvidia_ml_version=libnvml,
        cudnn=cudnn,
        nccl=nccl,
        tensorrt=trt,
        toolkits=toolkits,
        cuda_default=default,
        nvcc_release=nvcc_release,
        nvcc_version=nvcc_full,
        broken_links=_broken_links(host),
        env=env,
        env_missing=_env_missing(host, env),
        unread=unread,
    )


def _modules(host: Host, unread: dict[str, str]) -> tuple[dict[str, bool] | None, dict[str, str]]:
    r = read_text(host, "proc/modules")
    if r.text is None:
        # Absent on kernels built without loadable modules (or booted with `nomodule`).
        unread["modules"] = f"{r.reason}: proc/modules"
        return None, {}
    loaded = parse_proc_modules(r.text)
    if r.text.strip() and not loaded:
        unread["modules"] = malformed(r.text)
        return None, {}
    present = {name: name in loaded for name in NVIDIA_MODULES}
    taints = {n: loaded[n].taints for n in NVIDIA_MODULES if n in loaded and loaded[n].taints}
    return present, taints


def _libraries(
    host: Host, unread: dict[str, str]
) -> tuple[tuple[StackLibrary, ...] | None, tuple[str, ...]]:
    res = host.run(["ldconfig", "-p"])
    if res.status is RunStatus.MISSING and host.exists("sbin/ldconfig"):
        res = host.run(["/sbin/ldconfig", "-p"])  # sbin is not on a user's PATH
    if not res.ok:
        unread["libraries"] = res.failure()
        return None, ()
    cached = parse_ldconfig(res.stdout)
    if not cached:
        unread["libraries"] = malformed(res.stdout)
        return None, ()
    stack = [c for c in cached if _STACK_LIB_RE.match(c.name)]
    libs = tuple(StackLibrary(c.name, c.path, _resolved_version(host, c)) for c in stack)
    # libnvidia-glcore.so.580.95.05 and friends carry the full driver version in their
    # soname: more than one version means a previous driver's libraries were left behind.
    full = (soname_version(c.name, c.name.split(".so.")[0]) for c in stack)
    userspace = sorted(
        {v for c, v in zip(stack, full) if v and "." in v and c.name.startswith("libnvidia-")},
        key=_version_key,
    )
    return libs, tuple(userspace)


def _resolved_version(host: Host, lib: CachedLibrary) -> str | None:
    """The version in the file name a library link finally points to (up to 8 links)."""
    stem = lib.name.split(".so")[0]
    rel = lib.path.lstrip("/")
    version = soname_version(rel.rsplit("/", 1)[-1], stem)
    for _ in range(8):
        target = host.readlink(rel)
        if target is None:
            break
        folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
        rel = target.lstrip("/") if target.startswith("/") else f"{folder}/{target}"
        found = soname_version(rel.rsplit("/", 1)[-1], stem)
        if found is not None and (version is None or found.count(".") > version.count(".")):
            version = found
    return version


def _lib_version(
    by_name: Mapping[str, StackLibrary], stem: str, unread: dict[str, str], listed: bool
) -> str | None:
    key = f"{stem.replace('-', '_')}_version"  # the field: libcuda_version...
    lib = by_name.get(f"{stem}.so.1")
    if lib is None:
        unread[key] = (
            f"missing: {stem}.so.1 is not in the linker cache"
            if listed
            else "unreadable: the linker cache could not be read"
        )
        return None
    if lib.version is None or lib.version == "1":
        unread[key] = f"unreadable: {lib.path} does not name its version"
        return None
    return lib.version


def _component(
    host: Host,
    by_name: Mapping[str, StackLibrary],
    stem: str,
    headers: tuple[str, ...],
    names: tuple[str, str, str],
) -> Component | None:
    for folder in _HEADER_DIRS:
        for base in host.glob(folder):
            for header in headers:
                text = host.read_opt(f"{base}/{header}")
                if text is None:
                    continue
                version = version_from_defines(parse_defines(text), names)
                if version is not None:
                    return Component(version, f"{base}/{header}")
    libs = [lib for lib in by_name.values() if lib.name.startswith(f"{stem}.so.") and lib.version]
    if not libs:
        return None
    best = max(libs, key=lambda lib: _version_key(lib.version or ""))
    return Component(best.version or "", best.path)


def _toolkits(host: Host) -> tuple[Toolkit, ...]:
    out: list[Toolkit] = []
    for path in host.glob("usr/local/cuda*"):
        if host.readlink(path) is not None or not host.is_dir(path):
            continue  # usr/local/cuda -> cuda-12.4: reported as cuda_default
        version = source = None
        for name, parse in (
            ("version.json", parse_cuda_version_json),
            ("version.txt", parse_cuda_version_txt),
            ("include/cuda.h", parse_cuda_h),
        ):
            text = host.read_opt(f"{path}/{name}")
            if text is not None and (version := parse(text)) is not None:
                source = f"{path}/{name}"
                break
        out.append(Toolkit(path, version, source))
    return tuple(out)


def _broken_links(host: Host) -> tuple[BrokenLink, ...]:
    out: list[BrokenLink] = []
    seen: set[str] = set()
    for folder in LIBRARY_DIRS:
        for base in host.glob(folder):
            if base.startswith("usr/local/cuda") and host.readlink(base.split("/lib")[0]):
                continue  # usr/local/cuda -> cuda-X.Y: the real folder is scanned itself
            for name in host.listdir(base):
                if not _STACK_LIB_RE.match(name):
                    continue
                rel = f"{base}/{name}"
                target = host.readlink(rel)
                if target is not None and rel not in seen and not host.exists(rel):
                    seen.add(rel)
                    out.append(BrokenLink(rel, target))
    return tuple(out)


def _env_missing(host: Host, env: Mapping[str, str]) -> tuple[EnvEntry, ...]:
    out: list[EnvEntry] = []
    for var in ENV_VARS:
        for entry in env.get(var, "").split(":"):
            if not entry:
                continue
            if not entry.startswith("/"):
                out.append(EnvEntry(var, entry, None))
            elif not host.exists(entry.lstrip("/")):
                out.append(EnvEntry(var, entry, False))
    return tuple(out)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())
