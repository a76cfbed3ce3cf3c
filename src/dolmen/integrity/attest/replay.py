"""The PCR values an event log implies, bank by bank, and what it can not vouch for.

A PCR is a running hash: ``new = H(old || digest)`` for each event, in log order, from
its reset value. Replaying the log and finding the TPM's (quoted) value proves the log is
the record of what was measured; the policy then judges the log's values. Rules (PC
Client PFP 1.05, sections 3.3.4 and 10.4):

- EV_NO_ACTION events are never extended (the Spec ID event, StartupLocality, vendor
  notes): they are informational.
- PCR 0 starts at the locality the CRTM ran at (the StartupLocality event, 0 or 3, in
  its last byte), every other PCR at zeros, except 17 to 22 (the DRTM PCRs), all ones
  until a dynamic launch resets them (no firmware log measures into them before one).
- The separator (EV_SEPARATOR) ends the pre-OS measurements of PCRs 0 to 7, exactly once
  each; its data is 0x00000000, or 0xFFFFFFFF when the firmware met an error; its digest
  is the hash of that data. EV_ACTION and EV_EFI_ACTION digests are the hash of their
  text. A digest that is not what it hashes is a tampered log.

A PCR the log cannot vouch for is unverifiable, never "pass": an event without a digest
for the bank, a bank whose algorithm Python cannot compute, a log cut short or junk (its
events after the cut are unknown). Verification fails on any unverifiable PCR it is asked
to check; that is the difference from Keylime's default accept-all policy.
"""

from __future__ import annotations

from collections.abc import Mapping

from dolmen.frozen import frozen
from dolmen.integrity.attest import tcg
from dolmen.integrity.attest.eventlog import STARTUP_LOCALITY_SIGNATURE, Event, EventLog
from dolmen.integrity.attest.ima import ImaList

PCRS = range(24)
_DRTM = range(17, 23)
_SEPARATOR_OK = b"\x00\x00\x00\x00"
_SEPARATOR_ERROR = b"\xff\xff\xff\xff"
IMA_PCR = 10


@frozen
class PcrReplay:
    """One PCR of one bank: the replayed value (None: unverifiable, ``reason`` says why)
    and how many events extended it."""

    value: bytes | None
    events: int
    reason: str | None = None


@frozen
class Replay:
    """Every bank's 24 PCRs as the log (and the IMA list) imply them, and the rule
    violations found (each fails verification)."""

    banks: Mapping[str, Mapping[int, PcrReplay]]
    problems: tuple[str, ...]

    def pcr(self, bank: str, index: int) -> PcrReplay:
        """One PCR; a bank the log did not measure into is unverifiable."""
        found = self.banks.get(bank)
        if found is None:
            return PcrReplay(None, 0, f"the event log has no {bank} bank")
        return found[index]


def reset_value(index: int, size: int, locality: int = 0) -> bytes:
    """The value a PCR holds at TPM startup (see the module docstring)."""
    if index in _DRTM:
        return b"\xff" * size
    if index == 0:
        return bytes(size - 1) + bytes([locality])
    return bytes(size)


def replay(log: EventLog, ima: ImaList | None = None) -> Replay:
    """The PCRs ``log`` implies; PCR 10 continues with the IMA list when one is given."""
    problems: list[str] = []
    if log.problem:
        problems.append(f"event log: {log.problem}")
    banks = {bank: _replay_bank(log, bank, problems) for bank in log.banks}
    if ima is not None:
        for bank, pcrs in banks.items():
            pcrs[IMA_PCR] = _extend_ima(pcrs[IMA_PCR], bank, ima)
        problems.extend(f"IMA list: {p}" for p in ima.problems)
        others = sorted({e.pcr for e in ima.entries} - {IMA_PCR})
        if others:
            problems.append(f"IMA list: entries for PCR {others} (a custom policy) not replayed")
    problems.extend(_separator_rules(log))
    return Replay({b: dict(p) for b, p in banks.items()}, tuple(dict.fromkeys(problems)))


def _replay_bank(log: EventLog, bank: str, problems: list[str]) -> dict[int, PcrReplay]:
    size = tcg.BY_NAME[bank].size if bank in tcg.BY_NAME else 0
    if log.problem:
        why = f"the event log cannot be read whole: {log.problem}"
        return {i: PcrReplay(None, 0, why) for i in PCRS}
    if tcg.digest(bank, b"") is None:
        why = f"{bank}: an algorithm this verifier cannot compute"
        return {i: PcrReplay(None, 0, why) for i in PCRS}
    locality = _locality(log.events, problems)
    values: dict[int, bytes | None] = {i: reset_value(i, size, locality) for i in PCRS}
    counts = dict.fromkeys(PCRS, 0)
    reasons: dict[int, str] = {}
    for event in log.events:
        if event.event_type == tcg.EV_NO_ACTION:
            continue
        counts[event.pcr] += 1
        measured = event.digests.get(bank)
        current = values[event.pcr]
        if measured is None:
            values[event.pcr] = None
            reasons.setdefault(
                event.pcr, f"event {event.number} ({event.type_name}) has no {bank} digest"
            )
        elif current is not None:
            values[event.pcr] = tcg.digest(bank, current + measured)
    return {i: PcrReplay(values[i], counts[i], reasons.get(i)) for i in PCRS}


def _locality(events: tuple[Event, ...], problems: list[str]) -> int:
    """The StartupLocality event's locality (0 without one). A second one, one after PCR 0
    was first extended, or a locality other than 0 or 3 is a rule violation."""
    extended, found = False, None
    for event in events:
        if event.pcr == 0 and event.event_type != tcg.EV_NO_ACTION:
            extended = True
        if event.event_type == tcg.EV_NO_ACTION and event.data.startswith(
            STARTUP_LOCALITY_SIGNATURE
        ):
            if (
                len(event.data) != 17
                or event.data[16] not in (0, 3)
                or extended
                or found is not None
            ):
                problems.append(
                    f"event {event.number}: a StartupLocality event that is malformed, "
                    "names a locality other than 0 or 3, is not the first, or comes after "
                    "PCR 0 was extended"
                )
            else:
                found = event.data[16]
    return 0 if found is None else found


def _separator_rules(log: EventLog) -> list[str]:
    problems: list[str] = []
    seen: dict[int, int] = {}
    for event in log.events:
        etype = event.event_type
        if etype == tcg.EV_SEPARATOR:
            seen[event.pcr] = seen.get(event.pcr, 0) + 1
            if event.data == _SEPARATOR_ERROR:
                problems.append(
                    f"event {event.number}: the firmware measured an error separator into "
                    f"PCR {event.pcr} (0xFFFFFFFF): pre-OS measurement failed"
                )
            elif event.data != _SEPARATOR_OK:
                problems.append(
                    f"event {event.number}: a separator in PCR {event.pcr} whose data is "
                    f"{event.data[:8].hex()!r}, not 00000000"
                )
        if etype in (tcg.EV_SEPARATOR, tcg.EV_ACTION, tcg.EV_EFI_ACTION):
            for bank, value in event.digests.items():
                expected = tcg.digest(bank, event.data)
                if expected is not None and expected != value:
                    problems.append(
                        f"event {event.number} ({event.type_name}, PCR {event.pcr}): its "
                        f"{bank} digest is not the hash of its data (a tampered log)"
                    )
    if not log.problem:
        for pcr in range(8):
            if seen.get(pcr, 0) != 1:
                problems.append(
                    f"PCR {pcr} has {seen.get(pcr, 0)} separators; the firmware ends each of "
                    "PCRs 0 to 7 with exactly one"
                )
    return problems


def _extend_ima(start: PcrReplay, bank: str, ima: ImaList) -> PcrReplay:
    if start.value is None:
        return start
    value = start.value
    entries = [e for e in ima.entries if e.pcr == IMA_PCR]
    for entry in entries:
        measured = entry.bank_digest(bank)
        if measured is None:
            return PcrReplay(None, start.events + len(entries), entry.unverifiable(bank))
        value = tcg.digest(bank, value + measured) or b""
    if ima.problems:  # a malformed line: what came after it is unknown
        return PcrReplay(None, start.events + len(entries), ima.problems[0])
    return PcrReplay(value, start.events + len(entries))
