"""Host trees for the tune tests, built at test time under tmp_path from the real recordings.

- ``proc/`` (sysctls, cmdline, meminfo, cpuinfo, interrupts) from prometheus/procfs's
  fixtures, and ``sys/devices/system`` (4 CPUs with per-CPU cpufreq, intel_pstate,
  powersave; 3 NUMA nodes of 128 GiB) from node_exporter's, both ttar archives in
  ../shared/recordings, extracted with their links (tests.facts.trees.extract_ttar).
- Network and inotify sysctls the recordings lack are copied from the machine running
  the tests (real values of a real kernel), read-only.
- What neither has is written here and named as ours: THP files, numa_balancing,
  per-node huge page folders in the kernel's layout, a GRUB default file, limits.conf,
  /etc/sysctl.conf with one line (to exercise boot-override detection).

Recordings are 0444; the copies are made writable (a tree is written by plain file I/O).
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from tests.conftest import recording
from tests.facts.trees import extract_ttar

LIVE_SYSCTLS = (
    "net/core/rmem_max",
    "net/core/wmem_max",
    "net/core/rmem_default",
    "net/core/wmem_default",
    "net/core/somaxconn",
    "net/core/netdev_max_backlog",
    "net/core/default_qdisc",
    "net/ipv4/tcp_rmem",
    "net/ipv4/tcp_wmem",
    "net/ipv4/tcp_max_syn_backlog",
    "net/ipv4/tcp_congestion_control",
    "net/ipv4/tcp_available_congestion_control",
    "net/ipv4/tcp_slow_start_after_idle",
    "net/ipv4/conf/all/arp_announce",
    "net/ipv4/conf/all/arp_ignore",
    "net/ipv4/conf/default/arp_announce",
    "net/ipv4/conf/default/arp_ignore",
    "fs/inotify/max_user_instances",
    "fs/inotify/max_user_watches",
)

OURS = {
    "sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never\n",
    "sys/kernel/mm/transparent_hugepage/defrag": "always defer defer+madvise [madvise] never\n",
    "proc/sys/kernel/numa_balancing": "1\n",
    "etc/default/grub": 'GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT="quiet splash"\n',
    "etc/security/limits.conf": "# /etc/security/limits.conf\n",
    "etc/sysctl.conf": "# local\nvm.swappiness = 30\n",
    "etc/hostname": "tune-test\n",
}


def build_host(root: Path) -> Path:
    """The standard tune test host (see module docstring)."""
    extract_ttar(
        recording("procfs/procfs__fixtures.ttar"),
        root,
        strip="fixtures/",
        only=("proc/sys/", "proc/cmdline", "proc/meminfo", "proc/cpuinfo", "proc/interrupts"),
    )
    extract_ttar(
        recording("sysfs/node_exporter__sys.ttar"),
        root,
        only=("sys/devices/system/cpu", "sys/devices/system/node"),
    )
    for rel in LIVE_SYSCTLS:
        src = Path("/proc/sys") / rel
        if src.exists():
            dst = root / "proc/sys" / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(src.read_bytes())
    for rel, text in OURS.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for node in sorted((root / "sys/devices/system/node").glob("node[0-9]*")):
        pages = node / "hugepages/hugepages-2048kB"
        pages.mkdir(parents=True)
        (pages / "nr_hugepages").write_text("0\n")
        (pages / "free_hugepages").write_text("0\n")
    (root / "etc/security/limits.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/sysctl.d").mkdir(parents=True, exist_ok=True)
    os.symlink("../sysctl.conf", root / "etc/sysctl.d/99-sysctl.conf")
    writable(root)
    return root


def add_nvme_irqs(root: Path, node: int = 1, irqs: str = "0-3") -> list[str]:
    """The recorded NVMe controller of procfs's fixtures (PCI 0000:01:00.0, MSI IRQs 81-89)
    with the class link the kernel makes, its NUMA node set to ``node`` (the recording says
    -1: a single-node laptop) and ``proc/irq/<n>/smp_affinity_list`` files holding ``irqs``."""
    extract_ttar(
        recording("procfs/procfs__fixtures.ttar"),
        root,
        strip="fixtures/",
        only=("sys/devices/pci0000:00/0000:00:02.1/0000:01:00.0",),
    )
    dev = root / "sys/devices/pci0000:00/0000:00:02.1/0000:01:00.0"
    link = root / "sys/class/nvme/nvme0"
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink("../../devices/pci0000:00/0000:00:02.1/0000:01:00.0/nvme/nvme0", link)
    if not (dev / "nvme/nvme0/device").exists():
        os.symlink("../..", dev / "nvme/nvme0/device")
    writable(dev)
    (dev / "numa_node").write_text(f"{node}\n")
    numbers = sorted(p.name for p in (dev / "msi_irqs").iterdir())
    for n in numbers:
        p = root / f"proc/irq/{n}/smp_affinity_list"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"{irqs}\n")
    return numbers


def writable(root: Path) -> None:
    """Give the owner write permission on every file and folder (recordings are 0444)."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            p = Path(dirpath) / name
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | 0o200)
    root.chmod(root.stat().st_mode | 0o200)


def snapshot(root: Path) -> dict[str, tuple[str, int, bytes | str]]:
    """A whole-tree fingerprint: every entry's type and permission bits, files by bytes,
    links by target, so an extra folder, a stray temporary or a changed mode shows."""
    out: dict[str, tuple[str, int, bytes | str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            mode = p.lstat().st_mode
            if stat.S_ISLNK(mode):
                out[rel] = ("link", 0, os.readlink(p))
            elif stat.S_ISDIR(mode):
                out[rel] = ("dir", stat.S_IMODE(mode), "")
            elif stat.S_ISREG(mode):
                out[rel] = ("file", stat.S_IMODE(mode), p.read_bytes())
            else:
                out[rel] = ("other", stat.S_IFMT(mode), "")
    return out


def copy_tree(src: Path, dst: Path) -> Path:
    """A copy of a tree, links kept as links."""
    shutil.copytree(src, dst, symlinks=True)
    return dst
