"""``net verify --ib``: each InfiniBand port's PKey table against what the partitions grant.

A port is ``ok`` (its table is the grant), ``differs`` (extra or missing PKeys, or one
held with the other membership: a compute port with *full* Default membership reaches
every other compute port) or ``unknown`` (its table or its GUID could not be read: never
taken for a match). RoCE ports are left out (their isolation is the VLAN's).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dolmen.host import Host
from dolmen.net.ib_fabric import port_guids
from dolmen.net.infiniband import Partition, granted, guid_text
from dolmen.net.pkeys import compare, read_port_pkeys


def verify_host(
    host: Host, partitions: Sequence[Partition], *, is_sm: bool = False
) -> list[dict[str, Any]]:
    """One row per port (``subject``, ``guid``, ``status``, the diff or the reason)."""
    tables, unread = read_port_pkeys(host)
    guids = port_guids(host)
    rows: list[dict[str, Any]] = []
    for t in tables:
        if (t.link_layer or "").lower() == "ethernet":
            continue
        guid = guid_text(t.guid) if t.guid else guids.get((t.device, t.port))
        row: dict[str, Any] = {"subject": t.subject, "guid": guid}
        why = unread.get(f"{t.device}/{t.port}")
        if row["guid"] is None:
            rows.append(
                {
                    **row,
                    "status": "unknown",
                    "reason": "port GUID unreadable (no gids/0, no node GUID of a one-port device)",
                }
            )
            continue
        if why:
            rows.append({**row, "status": "unknown", "reason": why})
            continue
        diff = compare(t.pkeys, granted(partitions, row["guid"], is_sm=is_sm))
        rows.append(
            {
                **row,
                "status": "ok" if diff.clean else "differs",
                "missing": list(diff.missing),
                "extra": list(diff.extra),
                "membership": list(diff.membership),
            }
        )
    seen = {f"{t.device}/{t.port}" for t in tables}
    rows += [
        {"subject": f"ib:{key}", "guid": None, "status": "unknown", "reason": why}
        for key, why in sorted(unread.items())
        if key not in seen
    ]
    return rows
