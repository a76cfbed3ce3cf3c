"""Pure parsers for the software-stack facts: driver, modules, libraries, headers, toolkits.

Each takes text and returns values or None; none raises on malformed input.
The formats, with where they come from:

- ``/proc/driver/nvidia/version``: "NVRM version: NVIDIA UNIX Open Kernel Module
  for x86_64  580.95.05  Release Build ..." (open modules, R515+) or "NVRM
  version: NVIDIA UNIX x86_64 Kernel Module  550.135  <date>" (proprietary).
- ``/proc/modules``: "name size refcount deps state address (taints)".
- ``ldconfig -p``: "<tab>libcuda.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so.1".
- C headers: ``#define CUDNN_MAJOR 9`` (cudnn_version.h), ``NCCL_MAJOR`` (nccl.h),
  ``NV_TENSORRT_MAJOR`` (NvInferVersion.h; TensorRT 10 defines it through
  ``TRT_MAJOR_ENTERPRISE``, so one level of aliasing is resolved).
- CUDA toolkits: ``version.json`` ({"cuda": {"version": "12.4.1"}}, CUDA 11.1+),
  ``version.txt`` ("CUDA Version 10.2.89", older), ``include/cuda.h``
  (``#define CUDA_VERSION 12040``, pip-installed toolkits carry neither file).
- ``nvcc --version``: "Cuda compilation tools, release 12.4, V12.4.131".
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from dolmen.facts.stack.model import CachedLibrary, KernelDriver, LoadedModule, NvccVersion
from dolmen.frozen.regex import pattern

_NVRM_RE = pattern(
    r"NVRM version:\s*NVIDIA UNIX\s+(?P<open>Open\s+)?(?:\S+\s+)?Kernel Module"
    r"(?:\s+for\s+\S+)?\s+(?P<version>\d+(?:\.\d+){1,3})\b"
)
_VERSION_RE = pattern(r"\d+(?:\.\d+){1,3}")
_LDCONFIG_RE = pattern(r"^\s+(?P<name>\S+)\s+\((?P<flags>[^)]*)\)\s+=>\s+(?P<path>/\S+)\s*$")
_DEFINE_RE = pattern(r"^\s*#\s*define\s+(?P<name>[A-Za-z_]\w*)\s+(?P<value>[^\s/]+)", re.M)
_NVCC_RE = pattern(r"release\s+(?P<release>\d+\.\d+),\s*V(?P<full>\d+(?:\.\d+){1,3})")
_DOTTED = pattern(r"\d+(?:\.\d+){0,3}")
_VERSION_TXT = pattern(r"CUDA Version\s+(\d+(?:\.\d+){1,3})")
_CUDA_VERSION_H = pattern(r"^\s*#\s*define\s+CUDA_VERSION\s+(\d{4,6})\b", re.M)


def parse_nvrm_version(text: str) -> KernelDriver | None:
    """The driver version and flavour from /proc/driver/nvidia/version, or None."""
    m = _NVRM_RE.search(text)
    if m is None:
        return None
    return KernelDriver(m["version"], "open" if m["open"] else "proprietary")


def parse_proc_modules(text: str) -> dict[str, LoadedModule]:
    """Loaded modules by name; lines that do not parse are skipped."""
    out: dict[str, LoadedModule] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 5 or not parts[1].isdigit() or not parts[2].lstrip("-").isdigit():
            continue
        taints = ""
        if len(parts) >= 7 and parts[-1].startswith("(") and parts[-1].endswith(")"):
            taints = parts[-1][1:-1]
        used_by = tuple(d for d in parts[3].split(",") if d and d != "-")
        out[parts[0]] = LoadedModule(
            parts[0], int(parts[1]), int(parts[2]), used_by, parts[4], taints
        )
    return out


def parse_ldconfig(text: str) -> list[CachedLibrary]:
    """Entries of ``ldconfig -p`` output (the "N libs found" header and junk are skipped)."""
    out: list[CachedLibrary] = []
    for line in text.splitlines():
        m = _LDCONFIG_RE.match(line)
        if m is not None:
            out.append(CachedLibrary(m["name"], m["flags"], m["path"]))
    return out


def soname_version(filename: str, stem: str) -> str | None:
    """The version a library file name carries: ("libcuda.so.580.95.05", "libcuda") -> "580.95.05".

    A bare major ("libcudnn.so.9") gives "9"; no version ("libcuda.so") gives None.
    """
    prefix = f"{stem}.so."
    if not filename.startswith(prefix):
        return None
    rest = filename[len(prefix) :]
    return rest if _DOTTED.fullmatch(rest) else None


def parse_defines(text: str) -> dict[str, str]:
    """``#define NAME VALUE`` pairs of a C header (first definition wins)."""
    out: dict[str, str] = {}
    for m in _DEFINE_RE.finditer(text):
        out.setdefault(m["name"], m["value"])
    return out


def version_from_defines(defines: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    """ "9.1.0" from the defines named (major, minor, patch...), resolving one alias level."""
    parts: list[str] = []
    for name in names:
        value = defines.get(name)
        if value is not None and not value.isdigit():
            value = defines.get(value)  # NV_TENSORRT_MAJOR -> TRT_MAJOR_ENTERPRISE -> 10
        if value is None or not value.isdigit():
            return None
        parts.append(str(int(value)))
    return ".".join(parts)


def parse_cuda_version_json(text: str) -> str | None:
    """The toolkit version of a CUDA ``version.json`` ({"cuda": {"version": "12.4.1"}})."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    cuda = doc.get("cuda") if isinstance(doc, dict) else None
    version = cuda.get("version") if isinstance(cuda, dict) else None
    if isinstance(version, str) and _VERSION_RE.fullmatch(version):
        return version
    return None


def parse_cuda_version_txt(text: str) -> str | None:
    """The toolkit version of a CUDA ``version.txt`` ("CUDA Version 10.2.89")."""
    m = _VERSION_TXT.search(text)
    return None if m is None else m[1]


def parse_cuda_h(text: str) -> str | None:
    """ "12.4" from ``#define CUDA_VERSION 12040`` in cuda.h (major*1000 + minor*10)."""
    # One targeted search: cuda.h is 1 MB of declarations on recent toolkits.
    m = _CUDA_VERSION_H.search(text)
    if m is None:
        return None
    n = int(m[1])
    return f"{n // 1000}.{(n % 1000) // 10}"


def parse_nvcc_version(text: str) -> NvccVersion | None:
    """The release line of ``nvcc --version``, or None."""
    m = _NVCC_RE.search(text)
    return None if m is None else NvccVersion(m["release"], m["full"])
