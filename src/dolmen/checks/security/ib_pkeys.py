"""``security.ib.pkeys``: each InfiniBand port's PKey table is what the partitions grant it.

The site's fabric file (docs/net-targets.md: a PKey per tenant, its member ports) is
named in ``[thresholds."security.ib.pkeys"] fabric``; without it the check does not apply.
A port that holds a partition it should not (or holds the Default partition with full
membership: 0xffff reaches every other compute port) is the isolation between tenants
gone; one that lacks its tenant's PKey is cut off. Members written as node names count
for this node when the name is its hostname (``net ib verify`` resolves the others).
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, skipped, unknown, warned
from dolmen.errors import InputError


@check(
    "security.ib.pkeys",
    title="InfiniBand PKey tables hold the partitions the fabric file grants, no others",
    level=Level.STANDARD,
    needs=("infiniband",),
    when=("infiniband",),
    remedy=(
        "Regenerate opensm's partitions.conf from the fabric file (dolmen net ib partitions "
        "--output /etc/opensm/partitions.conf) on the SM's host and reload it (kill -HUP "
        "opensm); dolmen net ib verify names each port's extra and missing PKeys."
    ),
    limits={"fabric": "", "sm": False},
    source="opensm(8) partition configuration; NVIDIA InfiniBand security guidance",
    gating=False,
)
def pkeys(ctx: Context) -> list[Outcome]:
    """Reads ``sys/class/infiniband/*/ports/*/pkeys/*`` and GID 0 of each port."""
    from dolmen.net.ib_fabric import load_fabric, node_port_guids, partitions_for
    from dolmen.net.ib_verify import verify_host

    path = str(ctx.limit("fabric"))
    if not path:
        return [skipped("host", 'no fabric file: set fabric in [thresholds."security.ib.pkeys"]')]
    name = ctx.host.hostname.split(".")[0]
    try:
        fabric = load_fabric(path)
        parts = partitions_for(fabric, node_guids={name: node_port_guids(ctx.host)}, strict=False)
    except (InputError, ValueError) as e:  # the site's file: its own words name the fix
        return [unknown("host", f"the fabric file could not be used: {e}", fabric=path)]
    rows = verify_host(ctx.host, parts, is_sm=bool(ctx.limit("sm")))
    if not rows:
        return [unknown("host", "no PKey table was readable on any InfiniBand port")]
    return [_outcome(r) for r in rows]


def _outcome(row: dict[str, Any]) -> Outcome:
    subject, guid = row["subject"], row["guid"]
    if row["status"] == "unknown":
        return unknown(subject, f"PKey table not judged: {row['reason']}", guid=guid)
    ev = {k: row[k] for k in ("guid", "missing", "extra", "membership")}
    if row["status"] == "ok":
        return passed(subject, "the PKey table is what the partitions grant", **ev)
    said = "; ".join(
        f"{what} {', '.join(row[key])}"
        for key, what in (("extra", "extra"), ("membership", "membership"), ("missing", "missing"))
        if row[key]
    )
    return warned(subject, f"the PKey table differs from the partitions: {said}", **ev)
