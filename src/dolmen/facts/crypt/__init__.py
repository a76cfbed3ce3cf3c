"""Encrypted-storage posture: which block devices hold / and the data mounts, and which are LUKS.

Sources, each named in ``unread`` when it fails: ``proc/self/mountinfo`` (each mount's
device number; else ``proc/self/mounts`` or ``proc/mounts`` and the device's name),
``sys/dev/block/MAJ:MIN`` (the number to a device name),
``sys/class/block/<dev>/{slaves,holders,partition,dm/uuid,dm/name,md}`` (the stack from a
mount down to its disks), and the first bytes of each
device that may hold a LUKS header (``host.blockdev.read_head``; on a tree without them, a
recorded ``cryptsetup luksDump --dump-json-metadata /dev/<dev>``). dm-crypt names what it
opened in the mapping's uuid (``CRYPT-LUKS2-<uuid without dashes>-<name>``), so an open
volume is known to be LUKS2 even where its header cannot be read.

/boot and the EFI partition are left out: the firmware and GRUB read them unencrypted by
design (measured boot, not encryption, protects them: ``dolmen integrity``).
"""

from __future__ import annotations

import re

from dolmen.facts.crypt.luks2 import BINARY_SIZE, NOT_LUKS, Parsed, parse_dump_json, read_size
from dolmen.facts.crypt.luks2 import parse_header as parse_luks
from dolmen.facts.crypt.model import CryptFacts, Layer, LuksDevice, NvmeDrive, Volume
from dolmen.facts.crypt.mounts import (
    BOOT_MOUNTS,
    Mounted,
    crypt_of,
    parse_mountinfo,
    parse_mounts_dev,
    role_of,
)
from dolmen.facts.reading import absent, read_text, reason_for
from dolmen.host import Host
from dolmen.host.blockdev import read_head

BLOCK = "sys/class/block"
_NVME_DISK = re.compile(r"nvme\d+n\d+")


class _Reader:
    """One collection: sysfs reads cached by device, reasons gathered."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.unread: dict[str, str] = {}
        self.luks: dict[str, LuksDevice] = {}
        self.layers: dict[str, Layer] = {}

    def layer(self, name: str) -> Layer:
        if name not in self.layers:
            self.layers[name] = self._layer(name)
        return self.layers[name]

    def _layer(self, name: str) -> Layer:
        base = f"{BLOCK}/{name}"
        uuid = self.host.read_value(f"{base}/dm/uuid")
        dm_name = self.host.read_value(f"{base}/dm/name")
        crypt_type, luks_uuid = crypt_of(uuid)
        if crypt_type:
            kind = "crypt"
        elif uuid is not None and uuid.startswith("LVM-"):
            kind = "lvm"
        elif uuid is not None or name.startswith("dm-"):
            kind = "dm"
        elif self.host.exists(f"{base}/md") or name.startswith("md"):
            kind = "raid"
        elif self.host.exists(f"{base}/partition"):
            kind = "part"
        elif name.startswith("loop"):
            kind = "loop"
        else:
            kind = "disk"
        return Layer(name, kind, dm_name, crypt_type, luks_uuid)

    def below(self, name: str) -> list[str]:
        """The devices ``name`` is made of: its slaves, or a partition's disk."""
        slaves = self.host.listdir(f"{BLOCK}/{name}/slaves")
        if slaves:
            return slaves
        if self.host.exists(f"{BLOCK}/{name}/partition"):
            link = self.host.readlink(f"{BLOCK}/{name}")
            parts = (link or "").rstrip("/").split("/")
            if len(parts) >= 2:
                return [parts[-2]]
        return []

    def stack(self, name: str) -> tuple[Layer, ...]:
        out: list[Layer] = []
        todo, seen = [name], set[str]()
        while todo and len(seen) < 64:  # a hostile tree may link in circles
            n = todo.pop(0)
            if n in seen:
                continue
            seen.add(n)
            out.append(self.layer(n))
            todo.extend(self.below(n))
        return tuple(out)

    def above_crypt(self, name: str) -> bool:
        """Whether a dm-crypt mapping sits anywhere above ``name`` (holders, recursively)."""
        todo, seen = [name], set[str]()
        while todo and len(seen) < 64:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            if n != name and self.layer(n).kind == "crypt":
                return True
            todo.extend(self.host.listdir(f"{BLOCK}/{n}/holders"))
        return False

    def header(self, name: str) -> LuksDevice:
        if name not in self.luks:
            self.luks[name] = self._header(name)
        return self.luks[name]

    def _header(self, name: str) -> LuksDevice:
        rel = f"dev/{name}"
        try:
            head = read_head(self.host, rel, BINARY_SIZE)
            parsed = parse_luks(head)
            if parsed.header is None and not parsed.reason.startswith(NOT_LUKS):
                parsed = parse_luks(read_head(self.host, rel, read_size(head)))
            return LuksDevice(name, parsed.header, parsed.reason, rel)
        except FileNotFoundError:
            why = absent(self.host, rel)
        except OSError as e:
            why = f"{reason_for(e)}: {rel}"
        argv = ("cryptsetup", "luksDump", "--dump-json-metadata", f"/dev/{name}")
        result = self.host.run(argv)
        if result.ok:
            dumped: Parsed = parse_dump_json(result.stdout)
            return LuksDevice(name, dumped.header, dumped.reason, " ".join(argv))
        if result.rc == 1 and "not a valid LUKS device" in result.stderr:
            return LuksDevice(name, None, NOT_LUKS, " ".join(argv))
        return LuksDevice(name, None, f"{why}; {result.failure()}")


def collect(host: Host) -> CryptFacts:
    """The posture of the OS and data volumes and of the NVMe drives (module docstring)."""
    r = _Reader(host)
    mounts = _mounts(host, r.unread)
    volumes = tuple(_volume(r, *m) for m in mounts if role_of(m[0], m[2]))
    nvme = _nvme(r, mounts) if host.is_dir(BLOCK) else ()
    if not host.is_dir(BLOCK):
        r.unread["nvme"] = absent(host, BLOCK)
    return CryptFacts(volumes, tuple(r.luks.values()), nvme, r.unread)


def _mounts(host: Host, unread: dict[str, str]) -> list[Mounted]:
    info = read_text(host, "proc/self/mountinfo")
    if info.text is not None:
        return parse_mountinfo(info.text)
    why = [f"{info.reason}: proc/self/mountinfo"]
    for rel in ("proc/self/mounts", "proc/mounts"):  # as facts.storage reads them
        plain = read_text(host, rel)
        if plain.text is not None:
            return parse_mounts_dev(plain.text)
        why.append(f"{plain.reason}: {rel}")
    unread["volumes"] = "; ".join(why)
    return []


def _device_name(r: _Reader, number: str, source: str) -> str | None:
    """The kernel name of a mount's device, from its number (sysfs) or its path."""
    if number:
        link = r.host.readlink(f"sys/dev/block/{number}")
        if link:
            return link.rstrip("/").rsplit("/", 1)[-1]
    parts = source.split("/")  # a device-mapper name: ["", "dev", "mapper", "root"]
    if parts[1:3] == ["dev", "mapper"] and len(parts) == 4:
        want = parts[3]
        for dm in r.host.glob(f"{BLOCK}/dm-*"):
            if r.host.read_value(f"{dm}/dm/name") == want:
                return dm.rsplit("/", 1)[-1]
    elif source.startswith("/dev/") and r.host.exists(f"{BLOCK}/{source[5:]}"):
        return source[5:]
    return None


def _volume(r: _Reader, point: str, number: str, fstype: str, source: str) -> Volume:
    role = role_of(point, fstype) or "data"
    if not source.startswith("/dev/"):
        why = f"not a block device: {source} ({fstype})"
        return Volume(point, role, source, fstype, reason=why)
    name = _device_name(r, number, source)
    if name is None:
        where = f"sys/dev/block/{number}" if number else f"{BLOCK}/{source.rsplit('/', 1)[-1]}"
        return Volume(point, role, source, fstype, reason=absent(r.host, where))
    layers = r.stack(name)
    if any(layer.kind == "crypt" for layer in layers):
        for layer in layers:  # the device each mapping was opened from: its header
            if layer.kind == "crypt":
                for dev in r.below(layer.name):
                    r.header(dev)
        return Volume(point, role, source, fstype, layers, True)
    # No mapping: a LUKS device opened elsewhere cannot be mounted, so plain, unless a
    # layer is a device-mapper target whose uuid was not readable.
    blind = [la.name for la in layers if la.kind == "dm" and la.dm_name is None]
    if blind:
        why = f"unreadable: {BLOCK}/{blind[0]}/dm/uuid"
        return Volume(point, role, source, fstype, layers, None, why)
    return Volume(point, role, source, fstype, layers, False)


def _nvme(r: _Reader, mounts: list[Mounted]) -> tuple[NvmeDrive, ...]:
    held: dict[str, list[str]] = {}
    boot: set[str] = set()
    for point, number, fstype, source in mounts:
        if not source.startswith("/dev/"):
            continue
        name = _device_name(r, number, source)
        if name is None:
            continue
        for layer in r.stack(name):
            if point.startswith(BOOT_MOUNTS):
                boot.add(layer.name)
            elif role_of(point, fstype):
                held.setdefault(layer.name, []).append(point)
    out = []
    for disk in (d for d in r.host.listdir(BLOCK) if _NVME_DISK.fullmatch(d)):
        parts = [p for p in r.host.listdir(f"{BLOCK}/{disk}") if p.startswith(f"{disk}p")]
        pieces = [p for p in (parts or [disk]) if p not in boot]
        plain: list[str] = []
        unknown: list[str] = []
        for piece in pieces:
            if r.above_crypt(piece):
                continue
            dev = r.header(piece)
            if dev.header is not None:
                continue
            (plain if dev.reason == NOT_LUKS else unknown).append(piece)
        points = sorted({p for n in [disk, *parts] for p in held.get(n, [])})
        if plain:
            out.append(NvmeDrive(disk, tuple(pieces), False, tuple(plain), tuple(points)))
        elif unknown:
            why = r.header(unknown[0]).reason
            out.append(NvmeDrive(disk, tuple(pieces), None, (), tuple(points), why))
        else:
            out.append(NvmeDrive(disk, tuple(pieces), True, (), tuple(points)))
    return tuple(out)
