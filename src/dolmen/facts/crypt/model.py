"""The facts of encrypted storage (``dolmen facts --only crypt``): what holds each mount, which
devices are LUKS, and whether each NVMe drive is encrypted."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from dolmen.facts.crypt.luks2 import LuksHeader
from dolmen.frozen import frozen


@frozen
class Layer:
    """One block device in a mount's stack: ``dm-0``, ``md0``, ``nvme0n1p3``.

    ``kind`` is ``crypt`` (dm-crypt; ``crypt_type`` LUKS2, LUKS1, PLAIN...), ``lvm``,
    ``raid``, ``dm`` (another device-mapper target), ``part``, ``disk`` or ``loop``.
    """

    name: str
    kind: str
    dm_name: str | None = None
    crypt_type: str | None = None  # from dm/uuid: CRYPT-LUKS2-<uuid>-<name>
    luks_uuid: str | None = None  # the LUKS UUID the mapping was opened from


@frozen
class Volume:
    """A mount of the OS or of data, and what holds it.

    ``encrypted`` is True when a dm-crypt layer is in the stack, False when the stack was
    read to its disks and has none, None when it could not be read (``reason`` says why).
    """

    mountpoint: str
    role: str  # os, data
    source: str  # the mount table's device: /dev/mapper/root, /dev/nvme1n1
    fstype: str
    layers: tuple[Layer, ...] = ()  # top (the mounted device) down to the disks
    encrypted: bool | None = None
    reason: str = ""

    @property
    def subject(self) -> str:
        """The finding subject: ``mount:/raid``."""
        return f"mount:{self.mountpoint}"

    @property
    def crypt(self) -> Layer | None:
        """The dm-crypt layer of the stack, if any."""
        return next((layer for layer in self.layers if layer.kind == "crypt"), None)

    @property
    def disks(self) -> tuple[str, ...]:
        """The physical disks at the bottom of the stack."""
        return tuple(layer.name for layer in self.layers if layer.kind in ("disk", "loop"))


@frozen
class LuksDevice:
    """A device read for a LUKS header: the header, or None and why (``not LUKS`` too)."""

    name: str
    header: LuksHeader | None
    reason: str = ""
    source: str = ""  # header bytes (dev/<name>) or the luksDump command

    @property
    def subject(self) -> str:
        """The finding subject: ``disk:nvme0n1p3``."""
        return f"disk:{self.name}"


@frozen
class NvmeDrive:
    """An NVMe namespace (``nvme1n1``): encrypted at rest, or not, and what it holds.

    ``encrypted`` is True when every part of it in use (the drive itself or its partitions,
    /boot and the EFI partition left aside) is LUKS or under dm-crypt; False when one is
    read and is neither; None when one could not be read (``reason``).
    """

    name: str
    parts: tuple[str, ...] = ()  # the drive itself, or its partitions
    encrypted: bool | None = None
    plain: tuple[str, ...] = ()  # the parts that are not encrypted
    mounts: tuple[str, ...] = ()  # mount points held on it (any layer above)
    reason: str = ""

    @property
    def subject(self) -> str:
        """The finding subject: ``disk:nvme1n1``."""
        return f"disk:{self.name}"


@frozen
class CryptFacts:
    """Volumes of the OS and data, LUKS headers read, NVMe drives; reasons in ``unread``."""

    volumes: tuple[Volume, ...] = ()
    luks: tuple[LuksDevice, ...] = ()
    nvme: tuple[NvmeDrive, ...] = ()
    unread: Mapping[str, str] = field(default_factory=dict)

    def header(self, name: str) -> LuksDevice | None:
        """The LUKS read of device ``name``."""
        return next((d for d in self.luks if d.name == name), None)
