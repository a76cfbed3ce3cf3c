"""Measured-boot event logs written the way UEFI firmware writes them (TCG PC Client PFP
1.05), for the parser's tables, the replay and the swtpm tests.

``Log`` collects events; ``bytes()`` gives the binary_bios_measurements file, and
``extends()`` the (pcr, {bank: digest}) pairs to send to a TPM so that it holds what the
log claims. Options make the hostile variants: a bank left out of one event, a digest
that is not the hash of its data.
"""

from __future__ import annotations

import hashlib
import struct
import uuid
from dataclasses import dataclass, field

ALG_IDS = {
    "sha1": (0x0004, 20),
    "sha256": (0x000B, 32),
    "sha384": (0x000C, 48),
    "sha512": (0x000D, 64),
}
GLOBAL = uuid.UUID("8be4df61-93ca-11d2-aa0d-00e098032b8c")
IMAGE_DB = uuid.UUID("d719b2cb-3d3a-4596-a3bc-dad00e67656f")


def spec_id(banks: list[tuple[int, int]], vendor: bytes = b"") -> bytes:
    body = b"Spec ID Event03\x00" + struct.pack("<IBBBBI", 0, 0, 2, 0, 2, len(banks))
    body += b"".join(struct.pack("<HH", a, s) for a, s in banks)
    return body + bytes([len(vendor)]) + vendor


def sha1_event(pcr: int, etype: int, digest: bytes, data: bytes) -> bytes:
    return struct.pack("<II", pcr, etype) + digest + struct.pack("<I", len(data)) + data


def event2(pcr: int, etype: int, digests: list[tuple[int, bytes]], data: bytes) -> bytes:
    out = struct.pack("<III", pcr, etype, len(digests))
    out += b"".join(struct.pack("<H", a) + d for a, d in digests)
    return out + struct.pack("<I", len(data)) + data


def variable_data(name: str, data: bytes, guid: uuid.UUID = GLOBAL) -> bytes:
    return (
        guid.bytes_le + struct.pack("<QQ", len(name), len(data)) + name.encode("utf-16-le") + data
    )


def image_load(path: str) -> bytes:
    text = (path + "\x00").encode("utf-16-le")
    node = bytes([4, 4]) + struct.pack("<H", 4 + len(text)) + text
    dp = bytes([2, 1, 12, 0]) + bytes(8) + node + bytes([0x7F, 0xFF, 4, 0])  # ACPI node, file, end
    return struct.pack("<QQQQ", 0x1000, 0x2000, 0, len(dp)) + dp


@dataclass
class Log:
    banks: tuple[str, ...] = ("sha1", "sha256")
    events: list[bytes] = field(default_factory=list)
    measured: list[tuple[int, dict[str, bytes]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        header = spec_id([ALG_IDS[b] for b in self.banks])
        self.head = sha1_event(0, 0x3, bytes(20), header)

    def no_action(self, pcr: int, data: bytes) -> Log:
        zero = [(ALG_IDS[b][0], bytes(ALG_IDS[b][1])) for b in self.banks]
        self.events.append(event2(pcr, 0x3, zero, data))
        return self

    def locality(self, value: int) -> Log:
        return self.no_action(0, b"StartupLocality\x00" + bytes([value]))

    def add(
        self,
        pcr: int,
        etype: int,
        data: bytes,
        *,
        measured: bytes | None = None,
        drop: str | None = None,
        lie: bool = False,
    ) -> Log:
        """An event whose digests hash ``measured`` (default: the data itself); ``drop``
        leaves a bank out, ``lie`` writes digests of other bytes than the TPM gets."""
        what = data if measured is None else measured
        digests = {b: hashlib.new(b, what).digest() for b in self.banks if b != drop}
        self.measured.append((pcr, digests))
        shown = {b: hashlib.new(b, what + b"x").digest() for b in digests} if lie else digests
        self.events.append(event2(pcr, etype, [(ALG_IDS[b][0], d) for b, d in shown.items()], data))
        return self

    def separators(self, pcrs: range = range(8)) -> Log:
        for pcr in pcrs:
            self.add(pcr, 0x4, bytes(4))
        return self

    def bytes(self) -> bytes:
        return self.head + b"".join(self.events)

    def extends(self) -> list[tuple[int, dict[str, bytes]]]:
        return list(self.measured)


def server_boot(banks: tuple[str, ...] = ("sha1", "sha256"), *, locality: int | None = 3) -> Log:
    """What a UEFI server with Secure Boot logs up to the kernel: CRTM, firmware blobs,
    the Secure Boot variables, the boot order, shim, GRUB and the kernel, separators."""
    log = Log(banks)
    if locality is not None:
        log.locality(locality)
    log.add(0, 0x8, "1.0.37\x00".encode("utf-16-le"))  # EV_S_CRTM_VERSION
    log.add(0, 0x80000008, struct.pack("<QQ", 0xFF000000, 0x100000), measured=b"firmware volume")
    for name, data in (
        ("SecureBoot", b"\x01"),
        ("PK", b"pk-cert"),
        ("KEK", b"kek"),
        ("db", b"db"),
        ("dbx", b"dbx"),
    ):
        guid = IMAGE_DB if name in ("db", "dbx") else GLOBAL
        payload = variable_data(name, data, guid)
        log.add(7, 0x80000001, payload)
    log.add(1, 0x80000002, variable_data("BootOrder", b"\x01\x00"), measured=b"\x01\x00")
    log.add(1, 0x80000002, variable_data("Boot0001", b"ubuntu"), measured=b"ubuntu")
    log.add(4, 0x80000007, b"Calling EFI Application from Boot Option")
    log.separators()
    log.add(4, 0x80000003, image_load("\\EFI\\ubuntu\\shimx64.efi"), measured=b"shim binary")
    log.add(7, 0x800000E0, variable_data("db", b"microsoft uefi ca", IMAGE_DB))
    log.add(4, 0x80000003, image_load("\\EFI\\ubuntu\\grubx64.efi"), measured=b"grub binary")
    log.add(8, 0xD, b"grub_cmd: linux /vmlinuz root=/dev/sda1 ro\x00")
    log.add(9, 0xD, b"/boot/vmlinuz-6.8.0-49-generic\x00", measured=b"kernel image")
    log.add(5, 0x80000007, b"Exit Boot Services Invocation")
    return log
