"""The pure readers of crypt's posture: mountinfo lines (real ones from Ubuntu 22.04 and
Debian 12 nodes, escaped, truncated, junk), roles, and device-mapper uuids."""

from __future__ import annotations

import pytest

from dolmen.facts.crypt.mounts import crypt_of, parse_mountinfo, parse_mounts_dev, role_of

MOUNTINFO = r"""22 27 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
27 1 253:1 / / rw,relatime shared:1 - ext4 /dev/mapper/ubuntu--vg-ubuntu--lv rw
30 27 259:2 / /boot rw,relatime shared:3 - ext4 /dev/nvme0n1p2 rw
31 30 259:1 / /boot/efi rw,relatime shared:4 - vfat /dev/nvme0n1p1 rw,fmask=0077
40 27 9:127 / /raid rw,relatime shared:5 - ext4 /dev/md127 rw,stripe=256
41 27 253:2 / /data\040set rw,relatime shared:6 - xfs /dev/mapper/data rw
42 27 0:50 / /home rw,relatime shared:7 master:1 - nfs4 srv:/home rw,vers=4.2
43 27 253:3 / /mnt/a rw - ext4 /dev/dm-3 rw
43 27 253:4 / /mnt/a rw - ext4 /dev/dm-4 rw
garbage line
44 27 x:y / /bad rw - ext4 /dev/sdz rw
45 27 8:1 / /cut rw
"""


def test_mountinfo() -> None:
    got = {m[0]: m for m in parse_mountinfo(MOUNTINFO)}
    assert got["/"] == ("/", "253:1", "ext4", "/dev/mapper/ubuntu--vg-ubuntu--lv")
    assert got["/data set"][1] == "253:2"  # the kernel's \040 is a space
    assert got["/mnt/a"][1] == "253:4"  # the mount on top wins
    assert "/bad" not in got and "/cut" not in got
    assert parse_mountinfo("") == [] and parse_mountinfo("\0\0 - -") == []


def test_mounts_fallback() -> None:
    got = parse_mounts_dev("/dev/vda / ext4 rw 0 0\nshort line\n/dev/vdb /x\\040y xfs rw 0 0\n")
    assert got == [("/", "", "ext4", "/dev/vda"), ("/x y", "", "xfs", "/dev/vdb")]


@pytest.mark.parametrize(
    ("point", "fstype", "role"),
    [
        ("/", "ext4", "os"),
        ("/", "overlay", "os"),  # a container's root: what holds it cannot be followed
        ("/var", "xfs", "os"),
        ("/raid", "ext4", "data"),
        ("/data/set", "xfs", "data"),
        ("/boot", "ext4", None),
        ("/boot/efi", "vfat", None),
        ("/dev/shm", "tmpfs", None),
        ("/home", "nfs4", None),
        ("/proc", "proc", None),
        ("/snap/core/1", "squashfs", None),
        ("/run/user/0", "ext4", None),
    ],
)
def test_role(point: str, fstype: str, role: str | None) -> None:
    assert role_of(point, fstype) == role


@pytest.mark.parametrize(
    ("uuid", "want"),
    [
        (
            "CRYPT-LUKS2-46ed18dda74c4b0a925e29bb41629642-dm_crypt-0",
            ("LUKS2", "46ed18dd-a74c-4b0a-925e-29bb41629642"),
        ),
        (
            "CRYPT-LUKS1-46ED18DDA74C4B0A925E29BB41629642-root",
            ("LUKS1", "46ed18dd-a74c-4b0a-925e-29bb41629642"),
        ),
        ("CRYPT-PLAIN-swap", ("PLAIN", None)),
        ("LVM-abcdefabcdef", (None, None)),
        ("", (None, None)),
        (None, (None, None)),
        ("crypt-luks2-x", (None, None)),
    ],
)
def test_crypt_of(uuid: str | None, want: tuple[str | None, str | None]) -> None:
    assert crypt_of(uuid) == want
