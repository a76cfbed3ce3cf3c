"""Software-stack facts: NVIDIA driver and modules, user-space libraries, cuDNN, NCCL,
TensorRT, CUDA toolkits, broken library links and the CUDA environment variables.

Sources (parsers in ``versions``, the libraries read by ``libraries``, the dataclasses
in ``model``): ``proc/driver/nvidia/version``,
``proc/modules``, ``sys/module/nvidia/version``, ``ldconfig -p`` (tree key
``ldconfig%20-p``) and the links it names, C headers under ``usr/include`` and the
toolkits' ``include`` folders, ``usr/local/cuda*`` (``version.json``,
``version.txt``, ``include/cuda.h``, the ``usr/local/cuda`` link), ``nvcc
--version`` and the host's environment (CUDA_HOME, CUDA_PATH, PATH, LD_LIBRARY_PATH).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from dolmen.facts.reading import absent, malformed, read_text, unrecorded
from dolmen.facts.stack.libraries import broken_links, lib_version, read_component, read_libraries
from dolmen.facts.stack.model import (
    BrokenLink,
    CachedLibrary,
    Component,
    EnvEntry,
    KernelDriver,
    LoadedModule,
    NvccVersion,
    StackFacts,
    StackLibrary,
    Toolkit,
)
from dolmen.facts.stack.versions import (
    parse_cuda_h,
    parse_cuda_version_json,
    parse_cuda_version_txt,
    parse_nvcc_version,
    parse_nvrm_version,
    parse_proc_modules,
)
from dolmen.host import Host, RunStatus

__all__ = [
    "NVIDIA_MODULES",
    "BrokenLink",
    "CachedLibrary",
    "Component",
    "EnvEntry",
    "KernelDriver",
    "LoadedModule",
    "NvccVersion",
    "StackFacts",
    "StackLibrary",
    "Toolkit",
    "collect",
]

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
ENV_VARS = ("CUDA_HOME", "CUDA_PATH", "PATH", "LD_LIBRARY_PATH")


def collect(host: Host) -> StackFacts:
    """Read and parse the software stack of ``host``."""
    unread: dict[str, str] = {}
    driver_version = flavour = None
    r = read_text(host, "proc/driver/nvidia/version")
    if r.text is None:
        hint = " (driver not loaded?)" if r.reason == "missing" else ""
        unread["driver_version"] = f"{r.reason}: proc/driver/nvidia/version{hint}"
    elif (drv := parse_nvrm_version(r.text)) is None:
        unread["driver_version"] = malformed(r.text)
    else:
        driver_version, flavour = drv.version, drv.flavour
    if driver_version is None:
        unread["driver_flavour"] = unread["driver_version"]
    module_version = host.read_value("sys/module/nvidia/version") or None
    if module_version is None:
        why = absent(host, "sys/module/nvidia/version")
        unread["module_version"] = why + (
            " (nvidia not loaded)" if why.startswith("missing") else ""
        )
    modules, taints = _modules(host, unread)
    libraries, userspace, libraries_source = read_libraries(host, unread)
    by_name = {lib.name: lib for lib in libraries or ()}
    libcuda = lib_version(by_name, "libcuda", unread, libraries is not None)
    libnvml = lib_version(by_name, "libnvidia-ml", unread, libraries is not None)
    cudnn = read_component(
        host,
        by_name,
        "libcudnn",
        ("cudnn_version.h", "cudnn.h"),
        ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"),
    )
    nccl = read_component(
        host, by_name, "libnccl", ("nccl.h",), ("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH")
    )
    trt = read_component(
        host,
        by_name,
        "libnvinfer",
        ("NvInferVersion.h",),
        ("NV_TENSORRT_MAJOR", "NV_TENSORRT_MINOR", "NV_TENSORRT_PATCH"),
    )
    for key, comp in (("cudnn", cudnn), ("nccl", nccl), ("tensorrt", trt)):
        if comp is None and libraries is None and unrecorded(unread.get("libraries")):
            unread[key] = unread["libraries"]  # neither headers nor a linker cache recorded
        elif comp is None:
            unread[key] = "missing: no header or library found"
    toolkits = _toolkits(host)
    if not toolkits and unrecorded(host.absent("usr/local")):
        unread["toolkits"] = absent(host, "usr/local")
    default = host.readlink("usr/local/cuda")
    if default is not None:  # absolute, so a snapshot's relative link reads the same
        default = posixpath.normpath(posixpath.join("/usr/local", default))
    else:
        why = host.absent("usr/local/cuda")
        unread["cuda_default"] = (
            absent(host, "usr/local/cuda")
            if unrecorded(why)
            else "missing: usr/local/cuda is not a link"
        )
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
        broken_links=broken_links(host, unread),
        env=env,
        env_missing=_env_missing(host, env),
        unread=unread,
        libraries_source=libraries_source,
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
