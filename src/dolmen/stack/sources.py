"""Pure parsers of the tools that state a component's version, and the package patterns.

- ``modinfo nvidia``: ``filename:``, ``version:``, ``license:`` ("Dual MIT/GPL" for the
  open modules, "NVIDIA" for the proprietary ones), ``signer:``/``sig_key:``/
  ``sig_hashalgo:`` (absent on an unsigned module).
- ``nvidia-ctk --version``: "NVIDIA Container Toolkit CLI version 1.14.6".
- ``nv-fabricmanager --version``: "Fabric Manager version is : 550.54.15"; its log
  (``var/log/fabricmanager.log``): "Fabric Manager version 535.161.08 is running ...".
- ``dcgmi --version``: "dcgmi  version: 3.3.5".
- ``ofed_info -s``: "MLNX_OFED_LINUX-23.10-1.1.9.0:" or "OFED-internal-24.04-0.6.6:"
  (DOCA-OFED).
"""

from __future__ import annotations

import re

# Package names per component kind and manager (Ubuntu/Debian with NVIDIA's CUDA
# repository and Ubuntu's own restricted drivers; RHEL with NVIDIA's CUDA repository).
# The first pattern of a kind names the package its version is read from.
PATTERNS: dict[str, dict[str, tuple[str, ...]]] = {
    "driver": {
        "apt": (
            r"nvidia-driver(-\d+)?(-open|-server|-server-open)?",
            r"cuda-drivers(-\d+)?",
            r"nvidia-open(-\d+)?",
            r"libnvidia-compute-\d+(-server)?",
            r"nvidia-dkms-\d+(-open|-server|-server-open)?",
            r"nvidia-kernel-(open-)?dkms",
        ),
        "dnf": (r"nvidia-driver", r"cuda-drivers(-\d+)?", r"nvidia-open", r"kmod-nvidia.*"),
    },
    "cudnn": {
        "apt": (r"(lib)?cudnn\d+(-cuda-\d+)?",),
        "dnf": (r"(lib)?cudnn\d*(-cuda-\d+)?",),
    },
    "nccl": {"apt": (r"libnccl2",), "dnf": (r"libnccl",)},
    "tensorrt": {"apt": (r"libnvinfer\d+", r"tensorrt"), "dnf": (r"libnvinfer\d+", r"tensorrt")},
    "container-toolkit": {
        "apt": (
            r"nvidia-container-toolkit",
            r"nvidia-container-toolkit-base",
            r"libnvidia-container1",
        ),
        "dnf": (
            r"nvidia-container-toolkit",
            r"nvidia-container-toolkit-base",
            r"libnvidia-container1",
        ),
    },
    "fabric-manager": {
        "apt": (r"nvidia-fabricmanager(-\d+)?", r"libnvidia-nscq-\d+"),
        "dnf": (r"nvidia-fabric-?manager", r"libnvidia-nscq(-\d+)?"),
    },
    "dcgm": {
        "apt": (r"datacenter-gpu-manager(-\d+)?(-core|-cuda\d+)?",),
        "dnf": (r"datacenter-gpu-manager(-\d+)?(-core|-cuda\d+)?",),
    },
    "doca": {
        "apt": (
            r"doca-ofed",
            r"mlnx-ofed-all",
            r"mlnx-ofed-kernel-dkms",
            r"mlnx-ofed-kernel-utils",
        ),
        "dnf": (r"doca-ofed", r"mlnx-ofed-all", r"kmod-mlnx-ofa_kernel", r"mlnx-ofa_kernel"),
    },
}

# Binaries whose hash a lock records, per kind.
BINARIES = {
    "container-toolkit": "usr/bin/nvidia-ctk",
    "fabric-manager": "usr/bin/nv-fabricmanager",
    "dcgm": "usr/bin/dcgmi",
    "doca": "usr/bin/ofed_info",
}

_VERSION = r"(\d+(?:\.\d+){1,3})"


def compiled(kind: str, manager: str) -> tuple[re.Pattern[str], ...]:
    """The package patterns of a kind for a manager (empty for an unknown pair)."""
    return tuple(re.compile(p) for p in PATTERNS.get(kind, {}).get(manager, ()))


def parse_modinfo(text: str) -> dict[str, str]:
    """``key: value`` fields of ``modinfo`` (first of each; ``sig_key`` keeps its colons);
    {} for text that names no module file or version."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip()
        if sep and re.fullmatch(r"[a-z_]+", key) and value.strip():
            out.setdefault(key, value.strip())
    # modinfo's own complaints ("modinfo: ERROR: Module nvidia not found.") are no module.
    return out if "filename" in out or "version" in out else {}


def module_flavour(license_text: str | None) -> str | None:
    """open | proprietary from a module's licence: the open GPU kernel modules are
    "Dual MIT/GPL", the proprietary ones "NVIDIA"."""
    if not license_text:
        return None
    if "MIT" in license_text or "GPL" in license_text:
        return "open"
    return "proprietary" if license_text.strip() == "NVIDIA" else None


def parse_ctk_version(text: str) -> str | None:
    """The version of ``nvidia-ctk --version``."""
    m = re.search(r"Container Toolkit CLI version\s+v?" + _VERSION, text)
    return None if m is None else m[1]


def parse_fm_version(text: str) -> str | None:
    """The version of ``nv-fabricmanager --version`` or the last start in its log."""
    found = re.findall(r"Fabric Manager version(?: is)?\s*:?\s*" + _VERSION, text)
    return found[-1] if found else None


def parse_dcgmi_version(text: str) -> str | None:
    """The version of ``dcgmi --version``."""
    m = re.search(r"version:\s*" + _VERSION, text)
    return None if m is None else m[1]


def parse_ofed_info(text: str) -> tuple[str, str] | None:
    """(flavour, version) of ``ofed_info -s``: ("MLNX_OFED", "23.10-1.1.9.0")."""
    m = re.search(
        r"^(MLNX_OFED_LINUX|OFED-internal|DOCA[-_]OFED\w*)-(\d[\w.\-]*?):?\s*$", text, re.M
    )
    if m is None:
        return None
    flavour = {"MLNX_OFED_LINUX": "MLNX_OFED", "OFED-internal": "DOCA-OFED"}.get(m[1], "DOCA-OFED")
    return flavour, m[2]
