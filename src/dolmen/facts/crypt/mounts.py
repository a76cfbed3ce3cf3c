"""The mount table as crypt's posture reads it: each mount's device number and role.

Pure: ``parse_mountinfo`` (``proc/self/mountinfo``: the device number of each mount, which
``proc/self/mounts`` lacks), ``parse_mounts_dev`` (its fallback), ``role_of`` (an OS mount,
a data mount, or neither) and ``crypt_of`` (what a device-mapper uuid says dm-crypt opened).
"""

from __future__ import annotations

import re

from dolmen.facts.storage import MEMORY_FS, NETWORK_FS, PSEUDO_FS, unescape

OS_MOUNTS = frozenset({"/", "/usr", "/var", "/home", "/opt", "/srv", "/tmp"})
BOOT_MOUNTS = ("/boot", "/efi")
_CRYPT_UUID = re.compile(r"CRYPT-([A-Z0-9]+)-([0-9a-fA-F]{32})?")

Mounted = tuple[str, str, str, str]  # mount point, major:minor ("" unknown), fstype, source


def parse_mountinfo(text: str) -> list[Mounted]:
    """``(mountpoint, major:minor, fstype, source)`` of each line of ``proc/self/mountinfo``;
    a mount point listed twice keeps its last line (the one on top)."""
    found: dict[str, Mounted] = {}
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        a, b = left.split(), right.split()
        if not sep or len(a) < 5 or len(b) < 2 or not re.fullmatch(r"\d+:\d+", a[2]):
            continue
        point = unescape(a[4])
        found.pop(point, None)
        found[point] = (point, a[2], b[0], unescape(b[1]))
    return list(found.values())


def parse_mounts_dev(text: str) -> list[Mounted]:
    """The same from ``proc/self/mounts``, without device numbers (``""``)."""
    found: dict[str, Mounted] = {}
    for line in text.splitlines():
        p = line.split()
        if len(p) >= 3:
            found.pop(unescape(p[1]), None)
            found[unescape(p[1])] = (unescape(p[1]), "", p[2], unescape(p[0]))
    return list(found.values())


def role_of(point: str, fstype: str) -> str | None:
    """``os``, ``data`` or None (a pseudo, memory, network, overlay or boot mount)."""
    if fstype in PSEUDO_FS or fstype in MEMORY_FS or fstype in NETWORK_FS:
        return None
    if fstype in ("overlay", "squashfs", "swap") or fstype.startswith("fuse"):
        return "os" if point == "/" else None
    if point.startswith(BOOT_MOUNTS) or point.startswith(("/proc", "/sys", "/dev", "/run")):
        return None
    return "os" if point in OS_MOUNTS else "data"


def crypt_of(dm_uuid: str | None) -> tuple[str | None, str | None]:
    """``(type, LUKS UUID)`` from a device-mapper uuid (``CRYPT-LUKS2-<32 hex>-root``)."""
    m = _CRYPT_UUID.match(dm_uuid or "")
    if not m:
        return None, None
    raw = m.group(2)
    uuid = f"{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:]}".lower() if raw else None
    return m.group(1), uuid
