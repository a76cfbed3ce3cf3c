"""Storage facts: mount tables, df space and inodes, fstab, NVMe controllers; trees and live."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from dolmen.facts import storage, to_jsonable
from dolmen.facts.reading import read_text
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording
from tests.facts.trees import extract_ttar

# A GPU node's mount table: the NFS line's options are those of the nfs4 mount in
# prometheus/procfs's recorded mountinfo; a space in a path is escaped as the kernel does.
MOUNTS = """sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
/dev/nvme0n1p2 / ext4 rw,relatime,errors=remount-ro 0 0
tmpfs /dev/shm tmpfs rw,nosuid,nodev,size=1056749636k 0 0
cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0
/dev/md0 /raid ext4 rw,relatime,stripe=256 0 0
/dev/nvme0n1p1 /boot/efi vfat ro,relatime,fmask=0077,dmask=0077 0 0
192.168.1.1:/srv/test /mnt/nfs/test nfs4 rw,vers=4.0,rsize=1048576,wsize=1048576,hard,proto=tcp 0 0
overlay /var/lib/docker/overlay2/abc/merged overlay rw,lowerdir=/x,upperdir=/y 0 0
/dev/md0 /mnt/my\\040data ext4 rw,relatime 0 0
/dev/sdb1 /scratch xfs rw 0 0
/dev/sdb1 /scratch xfs ro 0 0
"""
DF_SPACE = """Filesystem             1-blocks         Used    Available Capacity Mounted on
/dev/nvme0n1p2     1888556302336 102727491584 1689852014592       6% /
tmpfs              1082111627264            0 1082111627264       0% /dev/shm
/dev/md0          30721451769856 19001453084672 10184497680384     66% /raid
/dev/nvme0n1p1        535805952      6369280    529436672       2% /boot/efi
192.168.1.1:/srv/test 107374182400 53687091200 53687091200 50% /mnt/nfs/test
/dev/sdb1          1000000000 999000000 1000000 100% /scratch
"""
DF_INODES = """Filesystem             Inodes   IUsed     IFree IUse% Mounted on
/dev/nvme0n1p2     117211136 1460281 115750855    2% /
tmpfs              264184909       1 264184908    1% /dev/shm
/dev/md0          1875460096 4210781 1871249315    1% /raid
/dev/nvme0n1p1             0       0         0     - /boot/efi
192.168.1.1:/srv/test  6553600   1234   6552366    1% /mnt/nfs/test
"""
FSTAB = """# /etc/fstab: static file system information.
UUID=2d0c4a52-1c8e-4b5e-9f5a-8e0d6a1c2b3d /               ext4    errors=remount-ro 0       1
UUID=1A2B-3C4D  /boot/efi       vfat    umask=0077      0       1
/dev/md0 /raid ext4 defaults,nofail 0 2
192.168.1.1:/srv/test /mnt/nfs/test nfs4 hard,vers=4.0 0 0
/swap.img	none	swap	sw	0	0
/dev/sdc1 /data\\040set xfs
broken-line-with-one-field
/dev/sdd1 /x xfs defaults zero 2
"""


def test_parse_mounts_table() -> None:
    mounts = {m.mountpoint: m for m in storage.parse_mounts(MOUNTS)}
    assert set(mounts) == {
        "/",
        "/dev/shm",
        "/raid",
        "/boot/efi",
        "/mnt/nfs/test",
        "/mnt/my data",
        "/scratch",
    }  # no sysfs, proc, cgroup2, container overlay
    assert mounts["/dev/shm"].kind == "memory" and mounts["/mnt/nfs/test"].kind == "network"
    assert mounts["/boot/efi"].read_only and not mounts["/raid"].read_only
    assert mounts["/scratch"].read_only  # listed twice: the last (top) line wins
    assert mounts["/"].subject == "mount:/" and mounts["/"].device == "/dev/nvme0n1p2"


def test_parse_mounts_keeps_overlay_root_and_skips_junk() -> None:
    text = "overlay / overlay rw,lowerdir=/l 0 0\ngarbage\n\x00\xff\n/dev/sda1 /x\n"
    (root,) = storage.parse_mounts(text)
    assert root.kind == "overlay" and root.mountpoint == "/"
    assert storage.parse_mounts("") == []


def test_parse_mounts_live_table() -> None:
    text = Path("/proc/self/mounts").read_text()
    mounts = storage.parse_mounts(text)
    assert any(m.mountpoint == "/" for m in mounts)
    assert not any(m.fstype in storage.PSEUDO_FS for m in mounts)


def test_parse_df() -> None:
    space = storage.parse_df(DF_SPACE)
    assert space is not None and space["/raid"] == (30721451769856, 19001453084672, 10184497680384)
    assert space["/mnt/nfs/test"][0] == 107374182400
    inodes = storage.parse_df(DF_INODES)
    assert inodes is not None and inodes["/boot/efi"] == (0, 0, 0)
    assert storage.parse_df("") is None and storage.parse_df("\x00junk\n") is None
    assert storage.parse_df(DF_SPACE.splitlines()[0]) == {}
    truncated = storage.parse_df(DF_SPACE[: DF_SPACE.index("/dev/md0") + 20])
    assert truncated is not None and set(truncated) == {"/", "/dev/shm"}


def test_parse_fstab() -> None:
    entries, bad = storage.parse_fstab(FSTAB)
    assert [e.file for e in entries] == [
        "/",
        "/boot/efi",
        "/raid",
        "/mnt/nfs/test",
        "none",
        "/data set",
    ]
    assert entries[2].options == ("defaults", "nofail") and entries[2].passno == 2
    assert entries[5].options == ("defaults",) and entries[5].freq == 0
    assert bad == [8, 9]  # one field; a non-numeric freq
    assert storage.parse_fstab("") == ([], [])


def test_unescape() -> None:
    assert storage.unescape("/mnt/a\\040b\\011c\\134d") == "/mnt/a b\tc\\d"


def test_collect_tree(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        files={"proc/self/mounts": MOUNTS, "etc/fstab": FSTAB},
        commands={
            "df -P -B1": (DF_SPACE, 1, "df: /mnt/gone: Stale file handle"),
            "df -P -i": DF_INODES,
        },
    )
    facts = storage.collect(TreeHost(root))
    raid = facts.mount_at("/raid")
    assert raid is not None and raid.size_bytes == 30721451769856
    assert raid.inodes_free == 1871249315
    # A second mount of /dev/md0 is not listed by df: it has the first one's numbers.
    data = facts.mount_at("/mnt/my data")
    assert data is not None and data.available_bytes == raid.available_bytes
    scratch = facts.mount_at("/scratch")
    assert scratch is not None and scratch.used_bytes == 999000000
    assert scratch.inodes_total is None  # the inode table lacks it
    # df exited 1 but printed the rest: numbers kept, failure said.
    assert facts.unread["space"].startswith("command failed: df -P -B1: exit 1: df: /mnt/gone")
    assert facts.fstab is not None and len(facts.fstab) == 6
    assert facts.unread["fstab"] == "malformed: line 8, 9 of etc/fstab"


def test_collect_tree_without_commands_or_files(tmp_path: Path) -> None:
    root = make_tree(tmp_path, files={"proc/mounts": MOUNTS})  # no proc/self: the fallback
    facts = storage.collect(TreeHost(root))
    assert facts.mount_at("/") is not None and facts.mount_at("/")
    assert all(m.size_bytes is None for m in facts.mounts)
    # proc/ only: df and etc/fstab were not in this bundle.
    assert facts.unread["space"] == "not in this bundle: df -P -B1"
    assert facts.unread["fstab"] == "not in this bundle"
    empty = storage.collect(TreeHost(make_tree(tmp_path / "e", files={"proc/mounts": "\x00"})))
    assert empty.mounts == () and empty.unread["mounts"].startswith("malformed")


@pytest.mark.parametrize(
    "archive", ["sysfs/node_exporter__sys.ttar", "procfs/procfs__fixtures.ttar"]
)
def test_collect_nvme_recorded_without_serial(tmp_path: Path, archive: str) -> None:
    strip = "fixtures/" if archive.startswith("procfs") else ""
    root = extract_ttar(recording(archive), tmp_path, strip=strip, only=("sys/class/nvme",))
    facts = storage.collect(TreeHost(root))
    (nvme,) = facts.nvme
    assert (nvme.name, nvme.model, nvme.firmware_rev, nvme.state) == (
        "nvme0",
        "Samsung SSD 970 PRO 512GB",
        "1B2QEXP7",
        "live",
    )
    serial = read_text(TreeHost(root), "sys/class/nvme/nvme0/serial").text
    assert serial and serial.strip() not in json.dumps(dataclasses.asdict(facts))


def test_live_smoke() -> None:
    facts = storage.collect(LiveHost())
    assert json.loads(json.dumps(to_jsonable(facts)))  # dolmen facts --json
    root = facts.mount_at("/")
    assert root is not None and root.size_bytes is not None and root.size_bytes > 0
    assert root.available_bytes is not None and root.available_bytes <= root.size_bytes
    assert facts.fstab is not None
