"""Host trees of the stack tests: a scenario of tests/hosts (real nvidia-smi XML, ibstat and
/sys/class/infiniband recordings) with a dpkg status file and ``modinfo nvidia`` added."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import make_tree
from tests.hosts.scenarios import build

# The packages of an Ubuntu 22.04 HGX node on driver 580.105.08 (NVIDIA's CUDA repository).
PACKAGES = {
    "nvidia-driver-580-open": "580.105.08-0ubuntu1",
    "nvidia-fabricmanager-580": "580.105.08-1",
    "libnccl2": "2.27.7-1+cuda13.0",
    "cuda-toolkit-13-0": "13.0.2-1",
    "libcudnn9-cuda-13": "9.13.0.50-1",
    "datacenter-gpu-manager-4-core": "1:4.2.3-1",
    "nvidia-container-toolkit": "1.17.8-1",
    "linux-image-5.15.0-126-generic": "5.15.0-126.136",
}
MODINFO = """\
filename:       /lib/modules/5.15.0-126-generic/updates/dkms/nvidia.ko
version:        580.105.08
license:        Dual MIT/GPL
name:           nvidia
signer:         h100-node-01 Secure Boot Module Signature key
sig_key:        4A:CF:62:1B
sig_hashalgo:   sha512
"""


def status(packages: dict[str, str], held: tuple[str, ...] = ()) -> str:
    """A dpkg status file holding ``packages`` installed (``held`` ones on hold)."""
    return "\n".join(
        f"Package: {n}\nStatus: {'hold' if n in held else 'install'} ok installed\n"
        f"Architecture: amd64\nVersion: {v}\nDescription: {n}\n"
        for n, v in packages.items()
    )


def node(
    dest: Path,
    packages: dict[str, str] | None = None,
    *,
    scenario: str = "h100-hgx-healthy",
    held: tuple[str, ...] = (),
) -> Path:
    """The scenario tree with a dpkg database (``packages``, default PACKAGES) and modinfo."""
    build(scenario, dest)
    pkgs = PACKAGES if packages is None else packages
    files = {
        "var/lib/dpkg/status": status(pkgs, held),
        "lib/modules/5.15.0-126-generic/updates/dkms/nvidia.ko": b"\x7fELF nvidia",
    }
    return make_tree(dest, files=files, commands={"modinfo nvidia": MODINFO})
