"""A small host root with a boot chain and an AI stack, a signing key and its trust file."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from dolmen.integrity.hostroot import open_root
from dolmen.integrity.seal import seal
from dolmen.keys.file import FileKeyProvider

KERNEL = "6.8.0-45-generic"
MODULES = f"lib/modules/{KERNEL}"
LIB = "usr/lib/x86_64-linux-gnu"

FILES = {
    "boot/efi/EFI/BOOT/BOOTX64.EFI": b"MZ shim" + bytes(range(256)) * 4,
    "boot/efi/EFI/ubuntu/grubx64.efi": b"MZ grub" + bytes(300),
    "boot/grub/grub.cfg": b"menuentry 'Ubuntu' { linux /vmlinuz root=UUID=1 ro quiet }\n",
    f"boot/vmlinuz-{KERNEL}": os.urandom(100_000),  # one read
    f"boot/initrd.img-{KERNEL}": os.urandom(2_200_000),  # three 1 MiB reads
    "proc/cmdline": b"BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=UUID=1 ro quiet\n",
    "proc/sys/kernel/osrelease": f"{KERNEL}\n".encode(),
    f"{MODULES}/kernel/drivers/video/nvidia.ko": b"\x7fELF nvidia" + bytes(5000),
    f"{MODULES}/kernel/drivers/video/nvidia-uvm.ko": b"\x7fELF uvm" + bytes(3000),
    f"{MODULES}/modules.dep": b"kernel/drivers/video/nvidia-uvm.ko: kernel/drivers/video/nvidia.ko\n",
    "etc/modprobe.d/nvidia.conf": b"options nvidia NVreg_EnableGpuFirmware=1\n",
    f"{LIB}/libcuda.so.550.54.15": b"\x7fELF libcuda" + bytes(9000),
    f"{LIB}/libnvidia-ml.so.550.54.15": b"\x7fELF nvml" + bytes(4000),
    f"{LIB}/libcudnn.so.9.1.0": b"\x7fELF cudnn" + bytes(4000),
    f"{LIB}/libnccl.so.2.21.5": b"\x7fELF nccl" + bytes(4000),
    "usr/bin/nvidia-ctk": b"\x7fELF ctk",
    "etc/hostname": b"not sealed\n",
}
LINKS = {f"{LIB}/libcuda.so.1": "libcuda.so.550.54.15", f"{LIB}/libnccl.so.2": "libnccl.so.2.21.5"}


@dataclass
class Site:
    """A root to seal, the key that seals and the trust file that verifies."""

    root: Path
    key: Path
    trust: Path
    manifest: Path

    def signer(self) -> FileKeyProvider:
        return FileKeyProvider(self.key)

    def seal(self) -> bytes:
        with open_root(self.root) as host:
            data = seal(host, self.signer()).data
        self.manifest.write_bytes(data)
        return data


def make_site(tmp: Path) -> Site:
    """The root (files above, links, folders 0755), a fresh key and its trust line."""
    root = tmp / "root"
    for rel, data in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    for rel, target in LINKS.items():
        os.symlink(target, root / rel)
    key = tmp / "keys" / "integrity.key"
    FileKeyProvider.generate(key)
    trust = tmp / "trusted-keys"
    trust.write_bytes(key.with_name(key.name + ".pub").read_bytes())
    return Site(root, key, trust, tmp / "integrity.manifest")
