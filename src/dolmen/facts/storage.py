"""Storage facts: mounts with free space and inodes, fstab, NVMe controllers.

Sources: ``proc/self/mounts`` (else ``proc/mounts``); ``df -P -B1`` and ``df -P -i``
(tree keys ``df%20-P%20-B1`` and ``df%20-P%20-i``) for space and inodes per
mount; ``etc/fstab`` so checks can compare what is declared with what is
mounted; ``sys/class/nvme/nvme*/{model,firmware_rev,state,transport,address}``.
NVMe serial numbers are not read: facts end up in support bundles.

Kernel pseudo filesystems (proc, sysfs, cgroup, devpts, ...) are left out, and so
are overlay mounts other than ``/`` (one per container). tmpfs is kept and its
``kind`` is ``memory``, so a check can tell /dev/shm from a disk.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field, replace

from dolmen.facts.reading import absent, malformed, parsed, read_text, read_value
from dolmen.frozen import frozen
from dolmen.frozen.regex import pattern
from dolmen.host import NOT_IN_BUNDLE, Host

_OCTAL = pattern(r"\\([0-7]{3})")
_NVME = pattern(r"nvme\d+")
_DF_ROW = pattern(r"(.*?)\s+(\d+|-)\s+(\d+|-)\s+(\d+|-)\s+(?:\d+%|-)\s+(/.*)")

PSEUDO_FS = frozenset(
    {
        "autofs",
        "binfmt_misc",
        "bpf",
        "cgroup",
        "cgroup2",
        "configfs",
        "debugfs",
        "devpts",
        "devtmpfs",
        "efivarfs",
        "fusectl",
        "hugetlbfs",
        "mqueue",
        "nsfs",
        "proc",
        "pstore",
        "rpc_pipefs",
        "securityfs",
        "selinuxfs",
        "sysfs",
        "tracefs",
    }
)
MEMORY_FS = frozenset({"tmpfs", "ramfs"})
NETWORK_FS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "lustre", "gpfs", "beegfs", "ceph", "glusterfs", "9p"}
)
NVME = "sys/class/nvme"


@frozen
class Mount:
    """A mounted filesystem (``mount:<path>``) with its space from df; sizes in bytes."""

    device: str
    mountpoint: str
    fstype: str
    options: tuple[str, ...]
    read_only: bool
    kind: str  # disk, network, memory (tmpfs), overlay, fuse
    size_bytes: int | None = None
    used_bytes: int | None = None
    available_bytes: int | None = None
    inodes_total: int | None = None  # 0 on filesystems without fixed inodes (btrfs, vfat)
    inodes_used: int | None = None
    inodes_free: int | None = None

    @property
    def subject(self) -> str:
        """The finding subject: ``mount:/raid``."""
        return f"mount:{self.mountpoint}"


@frozen
class FstabEntry:
    """One ``etc/fstab`` line."""

    spec: str  # UUID=..., /dev/md0, server:/export
    file: str  # mount point (``none`` for swap)
    vfstype: str
    options: tuple[str, ...]
    freq: int = 0
    passno: int = 0


@frozen
class NvmeController:
    """An NVMe controller (``nvme:<name>``), without its serial number."""

    name: str
    model: str | None
    firmware_rev: str | None
    state: str | None  # live, resetting, connecting, dead
    transport: str | None  # pcie, tcp, rdma, fc
    address: str | None  # PCI address for pcie; traddr=... for fabrics


@frozen
class StorageFacts:
    """Mounts, fstab and NVMe controllers. None fields are explained in ``unread``."""

    mounts: tuple[Mount, ...] = ()
    fstab: tuple[FstabEntry, ...] | None = None
    nvme: tuple[NvmeController, ...] = ()
    unread: Mapping[str, str] = field(default_factory=dict)

    def mount_at(self, path: str) -> Mount | None:
        """The mount whose mount point is ``path``."""
        return next((m for m in self.mounts if m.mountpoint == path), None)


def unescape(field_text: str) -> str:
    """Undo the kernel's octal escapes in mount tables (``\\040`` space, ``\\011`` tab)."""
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field_text)


def kind_of(fstype: str) -> str:
    """How a filesystem type is stored: memory, network, overlay, fuse or disk."""
    if fstype in MEMORY_FS:
        return "memory"
    if fstype in NETWORK_FS:
        return "network"
    if fstype == "overlay":
        return "overlay"
    if fstype.startswith("fuse"):
        return "fuse"
    return "disk"


def parse_mounts(text: str) -> list[Mount]:
    """``proc/mounts`` without pseudo filesystems; a mount point listed twice keeps its last line.

    The last line for a mount point is the one on top, the one a path resolves to.
    """
    found: dict[str, Mount] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        device, point, fstype, opts = (unescape(p) for p in parts[:4])
        if fstype in PSEUDO_FS or (fstype == "overlay" and point != "/"):
            continue
        options = tuple(opts.split(","))
        found.pop(point, None)
        found[point] = Mount(device, point, fstype, options, "ro" in options, kind_of(fstype))
    return list(found.values())


def parse_df(text: str) -> dict[str, tuple[int | None, int | None, int | None]] | None:
    """``df -P -B1`` or ``df -P -i``: mount point -> (total, used, available/free).

    POSIX format keeps one line per filesystem; ``-`` (no inode count) becomes None.
    None when the header is missing.
    """
    lines = text.splitlines()
    if not lines or not lines[0].startswith("Filesystem"):
        return None
    row = _DF_ROW
    out: dict[str, tuple[int | None, int | None, int | None]] = {}
    for line in lines[1:]:
        m = row.fullmatch(line.rstrip())
        if m is None:
            continue
        values = [None if v == "-" else int(v) for v in m.group(2, 3, 4)]
        out[m.group(5)] = (values[0], values[1], values[2])
    return out


def parse_fstab(text: str) -> tuple[list[FstabEntry], list[int]]:
    """``etc/fstab`` entries, and the numbers of lines that are not entries (not comments)."""
    entries: list[FstabEntry] = []
    bad: list[int] = []
    for n, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        parts = [unescape(p) for p in stripped.split()]
        extra = parts[4:6]
        if len(parts) < 3 or len(parts) > 6 or not all(p.isdigit() for p in extra):
            bad.append(n)
            continue
        opts = tuple(parts[3].split(",")) if len(parts) > 3 else ("defaults",)
        nums = [int(p) for p in extra] + [0, 0]
        entries.append(FstabEntry(parts[0], parts[1], parts[2], opts, nums[0], nums[1]))
    return entries, bad


def read_nvme(host: Host, unread: dict[str, str]) -> tuple[NvmeController, ...]:
    """NVMe controllers from ``sys/class/nvme``."""
    out: list[NvmeController] = []
    names = host.listdir(NVME)
    if not names and host.absent(NVME) == NOT_IN_BUNDLE:
        unread["nvme"] = absent(host, NVME)  # no controller listed says nothing here
    for name in names:
        if not _NVME.fullmatch(name):
            continue
        values: dict[str, str | None] = {}
        for attr in ("model", "firmware_rev", "state", "transport", "address"):
            r = read_value(host, f"{NVME}/{name}/{attr}")
            values[attr] = r.text or None
            if not r.text and attr in ("model", "state"):
                unread[f"{name}.{attr}"] = r.reason or "unreadable (empty)"
        out.append(NvmeController(name, **values))
    return tuple(out)


def collect(host: Host) -> StorageFacts:
    """Read and parse the storage facts of ``host``."""
    unread: dict[str, str] = {}
    r = read_text(host, "proc/self/mounts")
    if r.text is None:
        r = read_text(host, "proc/mounts")
    # a host has at least its root mounted: an empty table is malformed
    mounts = parsed(r, lambda text: parse_mounts(text) or None, unread, "mounts") or []

    if mounts:
        space = _df(host, ["df", "-P", "-B1"], "space", unread)
        inodes = _df(host, ["df", "-P", "-i"], "inodes", unread)
        for i, m in enumerate(mounts):
            s = space.get(m.mountpoint) if space is not None else None
            n = inodes.get(m.mountpoint) if inodes is not None else None
            if s is None and m.device.startswith("/dev/"):
                # df lists a filesystem once: a bind mount has its first mount's numbers.
                twin = next((o.mountpoint for o in mounts if o.device == m.device), "")
                s = space.get(twin) if space is not None else None
                n = inodes.get(twin) if inodes is not None else None
            if space is not None and s is None:
                unread[f"{m.mountpoint}.space"] = "missing (df does not list this mount)"
            s, n = s or (None, None, None), n or (None, None, None)
            mounts[i] = replace(
                m,
                size_bytes=s[0],
                used_bytes=s[1],
                available_bytes=s[2],
                inodes_total=n[0],
                inodes_used=n[1],
                inodes_free=n[2],
            )

    fstab = None
    f = read_text(host, "etc/fstab")
    if f.text is None:
        unread["fstab"] = f.reason
    else:
        entries, bad = parse_fstab(f.text)
        fstab = tuple(entries)
        if bad:
            unread["fstab"] = f"malformed: line {', '.join(map(str, bad[:5]))} of etc/fstab"

    return StorageFacts(tuple(mounts), fstab, read_nvme(host, unread), unread)


def _df(
    host: Host, argv: list[str], what: str, unread: dict[str, str]
) -> dict[str, tuple[int | None, int | None, int | None]] | None:
    # df stats every mount: a dead NFS server would hang it, hence the short limit.
    res = host.run(argv, timeout=5)
    if not res.stdout.strip():
        unread[what] = res.failure()
        return None
    table = parse_df(res.stdout)
    if table is None:
        unread[what] = malformed(res.stdout)
    elif not res.ok:  # df exits 1 when one filesystem fails, and prints the others
        unread[what] = res.failure()
    return table
