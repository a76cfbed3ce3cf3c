"""The slow path of the verifier: parse a file line by line and name its first broken link.

Only runs where the fast path (verify.py) found something wrong, so it can afford
to parse every line and look ahead. The kinds it names:

- ``modified``: a line's content no longer matches its hash, or is not an event;
  or a line was rewritten with a fresh hash, which the next line's prev_hash betrays
- ``inserted``: a line that is not part of the chain (the line after it chains to
  the line before it), a duplicate, or a second event with the same sequence
- ``deleted``: a gap in the sequence that no later line fills
- ``reordered``: an event found before or after its place
- ``truncated``: the file ends inside a line
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dolmen.audit.event import AuditEvent, LineError, parse_line


@dataclass(frozen=True)
class Break:
    """The first broken link: what, where (file, 1-based line, sequence) and why."""

    kind: str
    file: Path
    line: int
    sequence: int | None
    message: str


@dataclass(frozen=True)
class _Entry:
    event: AuditEvent | None
    error: LineError | None


def find_break(
    lines: list[bytes],
    tail: bytes,
    *,
    file: Path,
    first_line: int,
    expected: int,
    last_hash: str,
    committed: int | None = None,
) -> tuple[Break | None, int, str]:
    """The first anomaly in ``lines`` (complete lines without newlines) and ``tail`` (bytes
    after the last newline), starting from the chain state (``expected`` sequence,
    ``last_hash``); ``committed`` is the last sequence the head record names, if this
    is the last file. Returns the break (None if all is well) and the chain state after
    the last accepted line."""
    entries = [_parse(x) for x in lines]
    seen: dict[str, int] = {}

    def chains(j: int, seq: int, prev: str) -> bool:
        e = entries[j].event if 0 <= j < len(entries) else None
        return e is not None and e.sequence == seq and e.prev_hash == prev

    def brk(kind: str, i: int, seq: int | None, message: str) -> tuple[Break, int, str]:
        return Break(kind, file, first_line + i, seq, message), expected, last_hash

    for i, entry in enumerate(entries):
        ev = entry.event
        if ev is None:
            assert entry.error is not None
            appended = i == len(entries) - 1 and committed is not None and committed < expected
            if chains(i + 1, expected, last_hash) or appended:
                return brk("inserted", i, None, f"a line that is not an event ({entry.error})")
            return brk("modified", i, expected, f"line {first_line + i}: {entry.error}")
        assert ev.sequence is not None and ev.hash is not None and ev.prev_hash is not None
        seq = ev.sequence
        if seq == expected and ev.prev_hash == last_hash:
            seen[ev.hash] = i
            expected, last_hash = seq + 1, ev.hash
            continue
        if seq == expected:
            if chains(i + 1, expected, last_hash):
                return brk("inserted", i, seq, f"event {seq} here is not the one the chain holds")
            if i == 0:
                return brk("modified", i, seq, "its prev_hash does not match the event before it")
            return brk(
                "modified",
                i - 1,
                seq - 1,
                f"event {seq - 1} was rewritten: event {seq} names another hash before it",
            )
        if seq > expected:
            if any(e.event is not None and e.event.sequence == expected for e in entries[i + 1 :]):
                return brk("reordered", i, seq, f"event {seq} comes before event {expected}")
            if chains(i + 1, expected, last_hash):
                return brk("inserted", i, seq, f"event {seq} is not part of the chain")
            missing = f"{expected}" if seq == expected + 1 else f"{expected} to {seq - 1}"
            return brk("deleted", i, seq, f"event(s) {missing} are missing before event {seq}")
        # seq < expected: an event already seen, or one out of place
        if chains(i + 1, expected, last_hash) or ev.hash in seen:
            return brk("inserted", i, seq, f"event {seq} appears again")
        if i >= 1 and seq == expected - 1 and _prev_of(entries, i - 1) == ev.prev_hash:
            return brk("inserted", i - 1, seq, f"a forged event {seq} stands before the real one")
        return brk("reordered", i, seq, f"event {seq} comes after event {expected - 1}")
    if tail:
        return brk(
            "truncated",
            len(entries),
            expected,
            f"the file ends inside a line ({len(tail)} bytes after the last newline)",
        )
    return None, expected, last_hash


def _parse(line: bytes) -> _Entry:
    try:
        return _Entry(parse_line(line), None)
    except LineError as e:
        return _Entry(None, e)


def _prev_of(entries: list[_Entry], j: int) -> str | None:
    e = entries[j].event
    return e.prev_hash if e is not None else None
