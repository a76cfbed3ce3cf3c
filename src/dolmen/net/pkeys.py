"""A node's PKey tables (sysfs) and how they differ from what the partitions grant.

The subnet manager writes each end port's P_Key table; the kernel shows it as
``sys/class/infiniband/<dev>/ports/<n>/pkeys/<index>``, one ``0xNNNN`` per entry, unused
entries ``0x0000``. The low 15 bits are the partition, bit 15 the membership: set is full
(may talk to every member), clear is limited (may talk to full members only; two limited
members cannot reach each other). 0x0000 and 0x8000 are not partitions (IBTA 10.9.1).
The port GUID is the low 64 bits of GID 0 (``gids/0``: subnet prefix then port GUID);
RoCE ports carry the Ethernet default 0xffff alone and are not judged (their isolation is
the VLAN's).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from dolmen.frozen import frozen
from dolmen.host import Host

CLASS = "sys/class/infiniband"
FULL_BIT = 0x8000
PKEY_MASK = 0x7FFF
_PKEY = re.compile(r"^0x[0-9a-fA-F]{1,4}$")
_GID = re.compile(r"^[0-9a-f]{4}(?::[0-9a-f]{4}){7}$")


@frozen
class PortPkeys:
    """The P_Key table of one port, entries as the kernel shows them (bit 15 kept)."""

    device: str
    port: int
    link_layer: str | None
    guid: str | None  # 16 lowercase hex digits, from gids/0
    pkeys: tuple[int, ...]  # the used entries, table order

    @property
    def subject(self) -> str:
        """The finding subject: ``ib:mlx5_0/1``."""
        return f"ib:{self.device}/{self.port}"


@frozen
class PkeyDiff:
    """What a port's table has that it should not, lacks, or holds with another membership."""

    missing: tuple[str, ...] = ()  # "0x8001 (full)"
    extra: tuple[str, ...] = ()
    membership: tuple[str, ...] = ()  # "0x7fff: full, the policy grants limited"

    @property
    def clean(self) -> bool:
        """True when the table is what the policy grants."""
        return not (self.missing or self.extra or self.membership)


def parse_pkey(text: str) -> int | None:
    """One table entry (``0xffff``); None for junk, a truncated or an out-of-range value."""
    value = text.strip()
    return int(value, 16) if _PKEY.match(value) else None


def parse_gid_guid(text: str) -> str | None:
    """The port GUID (16 hex digits) of a GID as sysfs prints it; None when malformed."""
    value = text.strip().lower()
    if not _GID.match(value):
        return None
    return value.replace(":", "")[16:]


def membership(entry: int) -> str:
    """``full`` or ``limited``: bit 15 of a table entry."""
    return "full" if entry & FULL_BIT else "limited"


def read_port_pkeys(host: Host) -> tuple[list[PortPkeys], dict[str, str]]:
    """Every port's table, and ``{"<dev>/<port>": reason}`` for what could not be read."""
    ports: list[PortPkeys] = []
    unread: dict[str, str] = {}
    for dev in host.listdir(CLASS):
        for name in host.listdir(f"{CLASS}/{dev}/ports"):
            if not name.isdigit():
                continue
            base = f"{CLASS}/{dev}/ports/{name}"
            key = f"{dev}/{name}"
            folder = f"{base}/pkeys"
            if not host.is_dir(folder):
                unread[key] = f"{host.absent(folder)}: {folder}"
                continue
            entries: list[tuple[int, int]] = []
            bad: list[str] = []
            for index in host.listdir(folder):
                text = host.read_opt(f"{folder}/{index}")
                value = parse_pkey(text) if text is not None and index.isdigit() else None
                if value is None:
                    bad.append(index)
                elif value & PKEY_MASK:
                    entries.append((int(index), value))
            if bad:
                unread[key] = f"malformed: {folder}/{sorted(bad)[0]}" + (
                    f" and {len(bad) - 1} more" if len(bad) > 1 else ""
                )
            gid = host.read_opt(f"{base}/gids/0")
            layer = (host.read_opt(f"{base}/link_layer") or "").strip() or None
            ports.append(
                PortPkeys(
                    device=dev,
                    port=int(name),
                    link_layer=layer,
                    guid=parse_gid_guid(gid) if gid is not None else None,
                    pkeys=tuple(v for _, v in sorted(entries)),
                )
            )
    return ports, unread


def compare(actual: Iterable[int], granted: Mapping[int, str]) -> PkeyDiff:
    """``actual`` table entries against ``granted``: partition (15 bits) -> ``full``,
    ``limited`` or ``both``. Limited where full was granted cuts the port off from the
    other limited members; full where limited was granted lets it reach every member."""
    have: dict[int, set[str]] = {}
    for entry in actual:
        have.setdefault(entry & PKEY_MASK, set()).add(membership(entry))
    missing: list[str] = []
    changed: list[str] = []
    for pkey, grant in sorted(granted.items()):
        want = {"full", "limited"} if grant == "both" else {grant}
        got = have.get(pkey)
        if got is None:
            missing.append(f"{pkey:#06x} ({grant})")
        elif got != want:
            shown = "both" if len(got) == 2 else next(iter(got))
            changed.append(f"{pkey:#06x}: {shown}, the policy grants {grant}")
    extra = [
        f"{pkey:#06x} ({'both' if len(got) == 2 else next(iter(got))})"
        for pkey, got in sorted(have.items())
        if pkey not in granted
    ]
    return PkeyDiff(tuple(missing), tuple(extra), tuple(changed))
