"""The TPM's measured-boot event log (securityfs ``tpm0/binary_bios_measurements``), parsed.

The log is what the firmware says it measured; the TPM holds only the running hashes. It
opens with one event in the old SHA1 format (TCG_PCClientPCREvent: PCR, type, a 20-byte
digest, the data) whose data is the Spec ID event (``Spec ID Event03``): the banks the
firmware measured and each one's digest size. Every later event is a crypto-agile
TCG_PCR_EVENT2 (PCR, type, a digest per bank, the data), sized by that table: without it
the log cannot be read. A log without the Spec ID event is a TPM 1.2 style SHA1 log, read
as such (one sha1 digest per event). TCG PC Client PFP 1.05, sections 10.2 and 10.4.

The parser is pure and never raises: the log comes from a machine that is being judged,
so a truncated, junk or hostile log (huge counts, sizes past its end, digests of a bank
the Spec ID event did not declare) stops the parse where it goes wrong, keeps the events
before, and says where and why in ``problem``. A log with a problem fails attestation.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from dolmen.frozen import frozen
from dolmen.integrity.attest.tcg import ALGORITHMS, EV_NO_ACTION, algorithm_name, event_type_name

SPEC_ID_SIGNATURE = b"Spec ID Event03\x00"
STARTUP_LOCALITY_SIGNATURE = b"StartupLocality\x00"
# Bounds no real log comes near (a server's firmware logs a few hundred events of a few
# KiB; PFP allows at most as many banks as the TPM has, 5 in practice): past them the
# input is hostile, and a count taken on trust would make the parser allocate or loop.
MAX_ALGORITHMS = 16
MAX_EVENT_DATA = 16 << 20
MAX_EVENTS = 1 << 20
_SHA1_SIZE = 20


@frozen
class Bank:
    """One bank the Spec ID event declares: algorithm id, name and digest size."""

    alg_id: int
    name: str
    size: int


@frozen
class SpecId:
    """The Spec ID event: the platform class, the spec version and the declared banks."""

    platform_class: int
    version: str
    uintn_size: int
    banks: tuple[Bank, ...]


@frozen
class Event:
    """One measurement: its number in the log, the PCR it extended, its type, a digest per
    bank (keyed by tpm2-tools' bank name) and the measured event data."""

    number: int
    offset: int
    pcr: int
    event_type: int
    digests: Mapping[str, bytes]
    data: bytes

    @property
    def type_name(self) -> str:
        """The PFP name of the event type (``EV_EFI_BOOT_SERVICES_APPLICATION``)."""
        return event_type_name(self.event_type)


@frozen
class EventLog:
    """The parsed log: the Spec ID event (None for a SHA1-only log), the events read, and
    the problem that stopped the parse (None when the whole log was read)."""

    spec: SpecId | None
    events: tuple[Event, ...]
    size: int
    problem: str | None = None

    @property
    def banks(self) -> tuple[str, ...]:
        """The names of the banks the log measured into."""
        return tuple(b.name for b in self.spec.banks) if self.spec else ("sha1",)


class _Cut(Exception):
    """Internal: where and why the parse stopped."""


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            left = len(self.data) - self.pos
            raise _Cut(f"cut off at byte {self.pos}: {what} needs {n} bytes, {left} left")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def u8(self, what: str) -> int:
        return self.take(1, what)[0]

    def u16(self, what: str) -> int:
        value: int = struct.unpack("<H", self.take(2, what))[0]
        return value

    def u32(self, what: str) -> int:
        value: int = struct.unpack("<I", self.take(4, what))[0]
        return value

    @property
    def left(self) -> int:
        return len(self.data) - self.pos


def parse_event_log(data: bytes) -> EventLog:
    """The events of a binary_bios_measurements file (see the module docstring)."""
    r = _Reader(data)
    events: list[Event] = []
    spec: SpecId | None = None
    try:
        if not data:
            raise _Cut("the log is empty")
        first = _sha1_event(r, 0)
        events.append(first)
        if first.event_type == EV_NO_ACTION and first.data.startswith(SPEC_ID_SIGNATURE[:15]):
            spec = _spec_id(first.data)
            while r.left:
                events.append(_event2(r, len(events), spec))
        else:  # a SHA1 log (TPM 1.2 firmware, or a TPM 2.0 with a SHA1-only log)
            while r.left:
                events.append(_sha1_event(r, len(events)))
    except _Cut as cut:
        return EventLog(spec, tuple(events), len(data), str(cut))
    return EventLog(spec, tuple(events), len(data))


def _spec_id(data: bytes) -> SpecId:
    """TCG_EfiSpecIDEvent (PFP 10.4.5.1); raises ``_Cut`` when it is malformed."""
    r = _Reader(data)
    if r.take(16, "the Spec ID signature") != SPEC_ID_SIGNATURE:
        raise _Cut("the Spec ID event's signature is not 'Spec ID Event03'")
    platform = r.u32("platformClass")
    minor, major, errata = r.u8("specVersionMinor"), r.u8("specVersionMajor"), r.u8("errata")
    uintn = r.u8("uintnSize")
    count = r.u32("numberOfAlgorithms")
    if not 0 < count <= MAX_ALGORITHMS:
        raise _Cut(f"the Spec ID event declares {count} algorithms (1 to {MAX_ALGORITHMS})")
    banks: list[Bank] = []
    for _ in range(count):
        alg_id, size = r.u16("algorithmId"), r.u16("digestSize")
        known = ALGORITHMS.get(alg_id)
        if known is not None and known.size != size:
            raise _Cut(
                f"the Spec ID event gives {known.name} a {size}-byte digest, not {known.size}"
            )
        if not 0 < size <= 64 or any(b.alg_id == alg_id for b in banks):
            raise _Cut(f"the Spec ID event declares {algorithm_name(alg_id)} with size {size}")
        banks.append(Bank(alg_id, algorithm_name(alg_id), size))
    vendor = r.u8("vendorInfoSize")
    r.take(vendor, "vendorInfo")
    return SpecId(platform, f"{major}.{minor}.{errata}", uintn, tuple(banks))


def _sha1_event(r: _Reader, number: int) -> Event:
    offset = r.pos
    pcr, etype = _pcr(r.u32("pcrIndex"), offset), r.u32("eventType")
    sha1 = r.take(_SHA1_SIZE, "the SHA1 digest")
    data = _data(r)
    return Event(number, offset, pcr, etype, {"sha1": sha1}, data)


def _event2(r: _Reader, number: int, spec: SpecId) -> Event:
    if number >= MAX_EVENTS:
        raise _Cut(f"more than {MAX_EVENTS} events")
    offset = r.pos
    pcr, etype = _pcr(r.u32("pcrIndex"), offset), r.u32("eventType")
    count = r.u32("the digest count")
    if count > len(spec.banks):
        raise _Cut(
            f"event {number} at byte {offset} has {count} digests; the Spec ID event "
            f"declares {len(spec.banks)} banks"
        )
    digests: dict[str, bytes] = {}
    sizes = {b.alg_id: b for b in spec.banks}
    for _ in range(count):
        alg_id = r.u16("a digest's algorithm")
        bank = sizes.get(alg_id)
        if bank is None:  # its size is unknown, so nothing after it can be found
            raise _Cut(
                f"event {number} at byte {offset} has a {algorithm_name(alg_id)} digest, a "
                "bank the Spec ID event does not declare"
            )
        if bank.name in digests:
            raise _Cut(f"event {number} at byte {offset} has two {bank.name} digests")
        digests[bank.name] = r.take(bank.size, f"the {bank.name} digest")
    data = _data(r)
    return Event(number, offset, pcr, etype, digests, data)


def _data(r: _Reader) -> bytes:
    size = r.u32("eventSize")
    if size > MAX_EVENT_DATA:
        raise _Cut(f"an event at byte {r.pos - 4} claims {size} bytes of data")
    return r.take(size, "the event data")


def _pcr(pcr: int, offset: int) -> int:
    # PC Client TPMs have 24 PCRs; firmware logs nothing past 23 (a vendor's PCR of 0xffffffff
    # in a log is junk, and replaying it would need a register no TPM has).
    if pcr > 23:
        raise _Cut(f"the event at byte {offset} names PCR {pcr} (a TPM has PCRs 0 to 23)")
    return pcr
