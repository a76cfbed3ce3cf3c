"""Free space and free inodes of every writable filesystem, from ``df``.

Used is counted as df's ``Capacity`` column counts it: used over what users can
have (used + available), so the blocks reserved for root do not hide a full disk.
Read-only images (squashfs snaps, ISO, EROFS) are full by construction and left out,
as are filesystems mounted read-only; tmpfs is kept (a full /dev/shm stops NCCL).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown, warned
from dolmen.facts.storage import Mount

READ_ONLY_IMAGES = frozenset({"squashfs", "iso9660", "erofs", "cramfs", "udf"})
_SOURCE = (
    "imbue health_checks (>= 95 % used fails); NHC check_fs_used/check_fs_iused examples (90 %)"
)


def writable(m: Mount) -> bool:
    """A filesystem that can fill up: mounted read-write, not a read-only image."""
    return not m.read_only and m.fstype not in READ_ONLY_IMAGES


def _judge(
    ctx: Context,
    what: str,
    numbers: Callable[[Mount], tuple[int | None, int | None]],
    unread_key: str,
) -> list[Outcome]:
    facts = ctx.storage
    if "mounts" in facts.unread:
        return [unknown("host", f"mount table unreadable: {facts.unread['mounts']}")]
    mounts = [m for m in facts.mounts if writable(m)]
    if not mounts:
        return [skipped("host", "no writable filesystem mounted")]
    warn, fail = float(ctx.limit("warn_pct")), float(ctx.limit("fail_pct"))
    out: list[Outcome] = []
    for m in mounts:
        used, free = numbers(m)
        ev: dict[str, Any] = {"device": m.device, "fstype": m.fstype, "used": used, "free": free}
        if used is None or free is None:
            why = facts.unread.get(f"{m.mountpoint}.space") or facts.unread.get(unread_key)
            out.append(
                unknown(m.subject, f"{what} unreadable: {why or 'df gives no figure'}", **ev)
            )
            continue
        if used + free == 0:
            out.append(skipped(m.subject, f"{m.fstype} has no fixed {what}", **ev))
            continue
        pct = 100.0 * used / (used + free)
        ev["used_pct"] = round(pct, 1)
        line = f"{pct:.1f} % of {what} used"
        if pct >= fail:
            out.append(failed(m.subject, f"{line} (limit {fail:g} %)", **ev))
        elif pct >= warn:
            out.append(warned(m.subject, f"{line} (warning at {warn:g} %)", **ev))
        else:
            out.append(passed(m.subject, line, **ev))
    return out


@check(
    "storage.free_space",
    title="No writable filesystem is nearly full",
    level=Level.QUICK,
    needs=("storage",),
    remedy=(
        "Free space on the filesystem: du -xh --max-depth=2 <mount> | sort -h finds what grew "
        "(old checkpoints, core dumps, container images: docker system df); extend it if it "
        "is simply too small."
    ),
    limits={"warn_pct": 90, "fail_pct": 95},
    source=_SOURCE,
)
def free_space(ctx: Context) -> list[Outcome]:
    """Reads each mount's used and available bytes (df -P -B1)."""
    return _judge(ctx, "space", lambda m: (m.used_bytes, m.available_bytes), "space")


@check(
    "storage.inodes",
    title="No writable filesystem is nearly out of inodes",
    level=Level.QUICK,
    needs=("storage",),
    remedy=(
        "Find the directories with the most files (du --inodes -x --max-depth=3 <mount> | "
        "sort -n) and remove what is not needed (package caches, per-step logs, small "
        "checkpoint shards)."
    ),
    limits={"warn_pct": 90, "fail_pct": 95},
    source=_SOURCE,
)
def inodes(ctx: Context) -> list[Outcome]:
    """Reads each mount's used and free inodes (df -P -i)."""
    return _judge(ctx, "inodes", lambda m: (m.inodes_used, m.inodes_free), "inodes")
