"""Mounts against what they should be: read-write where declared so, present where declared.

ext4 and XFS remount themselves read-only after an I/O or metadata error
(``errors=remount-ro``), so a data or system filesystem found read-only is a
failing disk or array until shown otherwise. What should be read-write: what
``etc/fstab`` mounts without ``ro``, and the paths in ``rw_paths`` (/, /var, /tmp
and DGX's /raid by default).

fstab entries that are not mounted are compared as GCM does; ``noauto`` and
automount entries (mounted on first access), swap, and kernel pseudo filesystems
(which the storage facts leave out) are not expected in the mount table.
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown, warned
from dolmen.facts.reading import unrecorded
from dolmen.facts.storage import PSEUDO_FS, FstabEntry, Mount


def _norm(path: str) -> str:
    return path.rstrip("/") or "/"


def _declared_rw(entries: tuple[FstabEntry, ...] | None) -> dict[str, bool]:
    """fstab mount point -> declared read-write."""
    return {_norm(e.file): "ro" not in e.options for e in entries or () if e.file.startswith("/")}


@check(
    "storage.read_only",
    title="No filesystem that should be read-write is mounted read-only",
    level=Level.QUICK,
    needs=("storage",),
    remedy=(
        "The filesystem was probably remounted read-only after an error: read dmesg for "
        "EXT4-fs/XFS and I/O errors, check the disk (nvme smart-log /dev/nvmeX, smartctl -a) or "
        "the array (cat /proc/mdstat), then unmount and repair it (fsck / xfs_repair) before "
        "mounting it read-write again."
    ),
    limits={"rw_paths": ["/", "/var", "/tmp", "/raid"]},
    source="NHC check_fs_mount_rw; ext4/XFS errors=remount-ro behaviour",
)
def read_only(ctx: Context) -> list[Outcome]:
    """Reads the mount options (proc/self/mounts) and etc/fstab's declared options."""
    facts = ctx.storage
    if "mounts" in facts.unread:
        return [unknown("host", f"mount table unreadable: {facts.unread['mounts']}")]
    declared = _declared_rw(facts.fstab)
    expected = {_norm(str(p)) for p in ctx.limit("rw_paths")}
    out: list[Outcome] = []
    for m in facts.mounts:
        point = _norm(m.mountpoint)
        why = _should_be_rw(point, declared, expected)
        if why is None:
            continue
        ev: dict[str, Any] = {
            "device": m.device,
            "fstype": m.fstype,
            "options": list(m.options),
            "why_rw": why,
        }
        if m.read_only:
            out.append(failed(m.subject, f"mounted read-only, but {why}", **ev))
        else:
            out.append(passed(m.subject, "mounted read-write", **ev))
    if not out:
        return [skipped("host", "no mounted filesystem is expected read-write")]
    return out


def _should_be_rw(point: str, declared: dict[str, bool], expected: set[str]) -> str | None:
    if declared.get(point) is False:
        return None  # fstab says ro: a read-only mount is what the site wants
    if declared.get(point):
        return "fstab mounts it read-write"
    if point in expected:
        return "it is a system or data path (rw_paths)"
    return None


def _expected_mounted(e: FstabEntry) -> bool:
    return not (
        not e.file.startswith("/")
        or e.vfstype in ("swap", "none")
        or e.vfstype in PSEUDO_FS
        or "noauto" in e.options
        or "x-systemd.automount" in e.options
    )


@check(
    "storage.fstab",
    title="Every filesystem declared in fstab is mounted",
    level=Level.QUICK,
    needs=("storage",),
    remedy=(
        "Mount it (mount <mount>) and read why it failed: systemctl status <mount> (the "
        "systemd unit of the mount), dmesg for the device; for network filesystems check the "
        "server and the network."
    ),
    source="GCM health checks (fstab against the mount table); NHC check_fs_mount",
)
def fstab(ctx: Context) -> list[Outcome]:
    """Compares etc/fstab's entries with the mount table."""
    facts = ctx.storage
    if facts.fstab is None:
        why = facts.unread.get("fstab", "not read")
        if why.startswith("missing"):
            return [skipped("host", "no etc/fstab on this host")]
        if unrecorded(why):
            return [skipped("host", f"{why}: etc/fstab" if ":" not in why else why)]
        return [unknown("host", f"etc/fstab unreadable: {why}")]
    if "mounts" in facts.unread:
        return [unknown("host", f"mount table unreadable: {facts.unread['mounts']}")]
    mounted: dict[str, Mount] = {_norm(m.mountpoint): m for m in facts.mounts}
    out: list[Outcome] = []
    for e in facts.fstab:
        if not _expected_mounted(e):
            continue
        point = _norm(e.file)
        ev: dict[str, Any] = {"spec": e.spec, "fstype": e.vfstype, "options": list(e.options)}
        if point in mounted:
            out.append(passed(f"mount:{point}", f"mounted from {mounted[point].device}", **ev))
        else:
            note = " (nofail: boot went on without it)" if "nofail" in e.options else ""
            out.append(warned(f"mount:{point}", f"declared in fstab, not mounted{note}", **ev))
    if "fstab" in facts.unread:
        out.append(
            warned("host", f"etc/fstab has lines dolmen cannot read: {facts.unread['fstab']}")
        )
    return out or [skipped("host", "etc/fstab declares nothing to mount at boot")]
