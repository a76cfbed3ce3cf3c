"""The policy's tenants as opensm partitions: ``partitions.conf`` (pure) and the grants.

One partition per tenant, its PKey from the fabric file (``ib_fabric``), its members by
port GUID, each ``=full`` (a tenant's nodes must reach each other: two *limited* members
of a partition cannot) or ``=limited``; ``defmember=limited`` on every partition line, so
that a port listed without a membership (a hand edit) gets the weaker one. The Default
partition (0x7fff) is written explicitly: without a rule for it opensm already gives every
end port limited membership and its own port full, but a file that does not say so reads
as an oversight, and a missing file gives every port *full* Default membership (opensm(8)
"PARTITION CONFIGURATION"). So: ``Default=0x7fff, ipoib, defmember=limited : ALL=limited,
SELF=full, <SM and management ports>=full ;`` compute ports reach the SM and management,
never each other, through Default.

The grammar is opensm(8)'s: ``Name=PKey[,ipoib][,defmember=full|limited] : <GUID>[=full|
limited|both], ... ;``, ``#`` comments. opensm parses the file only on a sweep of a real
subnet (no ``--check`` mode, and it exits without a local port), so the tests hold the
output to that grammar with a parser of their own (tests/net/opensm_grammar.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from dolmen.frozen import frozen

DEFAULT_PKEY = 0x7FFF
MEMBERSHIPS = ("full", "limited", "both")
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")  # no '=', ',', ':', ';', '#' or blanks
GUID = re.compile(r"^0x[0-9a-f]{16}$")


@frozen
class Member:
    """One port of a partition: its GUID (``0x`` and 16 lowercase hex digits)."""

    guid: str
    membership: str = "full"  # one of MEMBERSHIPS
    node: str = ""  # where the GUID came from (a node name), for the comment


@frozen
class Partition:
    """One partition line: a tenant's (or Default)."""

    name: str
    pkey: int  # 15 bits: 0x0001..0x7fff
    members: tuple[Member, ...] = ()
    defmember: str = "limited"
    ipoib: bool = False
    everyone: str | None = None  # ALL=<membership> (the Default partition)
    self_full: bool = False  # SELF=full (the Default partition)


def guid_text(value: str) -> str | None:
    """A port GUID in the one form partitions.conf gets (``0x`` + 16 lowercase hex digits)
    from ``0x98039b0300a1b2c2``, ``9803:9b03:00a1:b2c2`` or a bare 16-digit form; None."""
    text = value.strip().lower().replace(":", "")
    text = text[2:] if text.startswith("0x") else text
    if not re.fullmatch(r"[0-9a-f]{1,16}", text) or int(text, 16) == 0:
        return None
    return f"0x{int(text, 16):016x}"


def default_partition(sm_ports: Iterable[str]) -> Partition:
    """Default: every end port limited, the SM (SELF) and the management ports full."""
    members = tuple(Member(g, "full", "sm/management") for g in sorted(set(sm_ports)))
    return Partition(
        "Default", DEFAULT_PKEY, members, ipoib=True, everyone="limited", self_full=True
    )


def render_partitions(partitions: Sequence[Partition], *, header: str = "") -> str:
    """``partitions.conf`` text; ValueError for what opensm would refuse or misread (a PKey
    out of range or used twice, a bad name or GUID, a port listed twice in one partition)."""
    seen: dict[int, str] = {}
    lines = [f"# {ln}".rstrip() for ln in header.splitlines()]
    for part in partitions:
        _check(part, seen)
        flags = "".join([", ipoib" if part.ipoib else "", f", defmember={part.defmember}"])
        lines.append(f"{part.name}={part.pkey:#06x}{flags} :")
        specs = []
        if part.everyone:
            specs.append(f"ALL={part.everyone}")
        if part.self_full:
            specs.append("SELF=full")
        specs += [f"{m.guid}={m.membership}" for m in part.members]
        notes = [""] * (len(specs) - len(part.members)) + [
            f"  # {m.node}" if m.node else "" for m in part.members
        ]
        if not specs:
            lines.append("    ;  # no members")
            continue
        for i, (spec, note) in enumerate(zip(specs, notes, strict=True)):
            end = " ;" if i == len(specs) - 1 else ","
            lines.append(f"    {spec}{end}{note}")
    return "\n".join(lines) + "\n"


def _check(part: Partition, seen: dict[int, str]) -> None:
    if not NAME.match(part.name):
        raise ValueError(f"partition name {part.name!r}: letters, digits, '_', '.', '-'")
    if not 0x0001 <= part.pkey <= 0x7FFF:
        raise ValueError(f"partition {part.name}: PKey {part.pkey:#x} is outside 0x0001..0x7fff")
    if part.pkey in seen:
        raise ValueError(
            f"partitions {seen[part.pkey]} and {part.name} have the same PKey {part.pkey:#06x}"
        )
    seen[part.pkey] = part.name
    if part.defmember not in ("full", "limited"):
        raise ValueError(f"partition {part.name}: defmember {part.defmember!r}: full or limited")
    guids = [m.guid for m in part.members]
    for m in part.members:
        if not GUID.match(m.guid) or m.membership not in MEMBERSHIPS:
            raise ValueError(f"partition {part.name}: member {m.guid}={m.membership} is invalid")
    twice = sorted({g for g in guids if guids.count(g) > 1})
    if twice:
        raise ValueError(f"partition {part.name}: port {twice[0]} is listed twice")


def granted(partitions: Sequence[Partition], guid: str, *, is_sm: bool = False) -> dict[int, str]:
    """The PKeys (15 bits) the partitions give port ``guid`` and its membership: what the
    SM writes in that port's table (``pkeys.compare`` holds a node's table to it)."""
    out: dict[int, str] = {}
    for part in partitions:
        grants = [m.membership for m in part.members if m.guid == guid]
        if part.everyone:
            grants.append(part.everyone)
        if part.self_full and is_sm:
            grants.append("full")
        if grants:
            out[part.pkey] = _union(grants)
    return out


def _union(grants: Iterable[str]) -> str:
    """Membership of a port granted several: full wins over limited (``ALL=limited,
    SELF=full`` gives the SM full membership, opensm(8)); ``both`` only where written."""
    kinds = set(grants)
    if "both" in kinds:
        return "both"
    return "full" if "full" in kinds else "limited"


def member_guids(partitions: Sequence[Partition]) -> Mapping[str, tuple[str, ...]]:
    """Partition name -> its members' GUIDs (for reports)."""
    return {p.name: tuple(m.guid for m in p.members) for p in partitions}
