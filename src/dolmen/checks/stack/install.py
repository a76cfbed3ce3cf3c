"""How to install or load the NVIDIA driver, in the package commands of each distribution.

The remedy of ``stack.driver.loaded`` depends on the host (``facts.os``): the
package names come from NVIDIA's driver installation guide (the CUDA
repositories' ``nvidia-open`` / ``cuda-drivers`` metapackages) and the
distributions' own packages (Ubuntu ``nvidia-driver-<branch>-server-open``,
Debian non-free ``nvidia-driver``, SUSE ``nvidia-open-driver-G06-signed``).
"""

from __future__ import annotations

from dolmen.facts.os import Distribution

_RHEL_LIKE = frozenset({"rhel", "centos", "rocky", "almalinux", "ol", "fedora", "amzn"})
_SUSE_LIKE = frozenset({"sles", "suse", "opensuse", "opensuse-leap", "opensuse-tumbleweed"})

# When the driver is installed but not loaded: what to look at, in the order admins do.
LOAD_HINT = (
    "If the driver is installed: sudo modprobe nvidia (dmesg | grep -iE 'nvidia|NVRM' says why "
    "it fails); dkms status shows whether the module was built for $(uname -r) "
    "(sudo dkms autoinstall); with Secure Boot on (mokutil --sb-state) an unsigned module is "
    "rejected: enroll the signing key (sudo mokutil --import <key.der>) and reboot."
)


def family(dist: Distribution | None) -> str:
    """ubuntu | debian | rhel | suse | other, from ID then ID_LIKE of os-release."""
    if dist is None:
        return "other"
    for name in (dist.id or "", *dist.id_like):
        name = name.lower()
        if name == "ubuntu":
            return "ubuntu"
        if name == "debian":
            return "debian"
        if name in _RHEL_LIKE:
            return "rhel"
        if name in _SUSE_LIKE or name.startswith("opensuse"):
            return "suse"
    return "other"


def package_command(dist: Distribution | None, branch: str | None = None) -> str:
    """The commands that install driver ``branch`` ("580") on ``dist``, then reboot."""
    b = branch or "<branch>"
    commands = {
        "ubuntu": (
            "sudo apt-get install -y linux-headers-$(uname -r) "
            f"nvidia-driver-{b}-server-open nvidia-utils-{b}-server "
            "(or sudo ubuntu-drivers install --gpgpu), then reboot"
        ),
        "debian": (
            "sudo apt-get install -y linux-headers-$(uname -r) nvidia-open "
            "(NVIDIA's CUDA repository; Debian's own: nvidia-driver from non-free), then reboot"
        ),
        "rhel": (
            "sudo dnf install -y kernel-devel-$(uname -r) kernel-headers && "
            "sudo dnf install -y nvidia-open (NVIDIA's CUDA repository; RHEL 8/9 module "
            f"streams: sudo dnf module install -y nvidia-driver:{b}-open), then reboot"
        ),
        "suse": (
            "sudo zypper install -y nvidia-open-driver-G06-signed-cuda-kmp-default "
            "nvidia-compute-utils-G06 (NVIDIA's CUDA repository), then reboot"
        ),
        "other": (
            "install the driver for this kernel (NVIDIA's CUDA repository: nvidia-open or "
            "cuda-drivers; or the .run installer with --dkms), then reboot"
        ),
    }
    return commands[family(dist)]


def install_remedy(dist: Distribution | None, branch: str | None = None) -> str:
    """Install the driver on ``dist``, or load it if it is installed already."""
    return f"Install the NVIDIA driver: {package_command(dist, branch)}. {LOAD_HINT}"
