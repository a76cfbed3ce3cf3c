"""The InfiniBand side of the policy: a PKey per tenant and its member ports (TOML).

    [sm]
    ports = ["0x98039b0300a1b2c0"]          # the SM's and management hosts' ports: full
                                            # members of Default (SELF is always full)
    [tenants.research]                      # a tenant of the policy file
    pkey = 0x0101                           # 0x0001..0x7ffe, one per tenant
    members = ["0x98039b0300a1b2c2", "gpu01"]   # full members: port GUIDs, or node names
    limited = ["0x98039b0300a1b2d0"]        # limited members (a shared storage server)

A node name stands for every InfiniBand port of that node, read from its facts (a snapshot
or a live host: ``node_port_guids``); a name whose facts were not given is refused, never
left out (a member left out is a node cut off, or worse, a partition written without
the operator seeing it). Kept apart from the policy file, whose keys h-net's loader checks,
because only the SM's host needs it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dolmen.config import check_keys, line_of, parse_toml, read_text
from dolmen.errors import ConfigError
from dolmen.host import Host
from dolmen.net.infiniband import (
    DEFAULT_PKEY,
    Member,
    Partition,
    default_partition,
    guid_text,
)
from dolmen.net.model import Policy

_TOP = {"sm": dict, "tenants": dict}
_SM = {"ports": list}
_TENANT = {"pkey": int, "members": list, "limited": list}


@dataclass(frozen=True)
class TenantPartition:
    """A tenant's PKey and members as written (GUIDs already in ``guid_text`` form)."""

    name: str
    pkey: int
    members: tuple[str, ...] = ()  # GUIDs or node names: full
    limited: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fabric:
    """The fabric file (module docstring)."""

    sm_ports: tuple[str, ...] = ()
    tenants: Mapping[str, TenantPartition] = field(default_factory=dict)
    origin: str = ""


def load_fabric(path: str | Path) -> Fabric:
    """The fabric file at ``path``; ConfigError naming file:line otherwise."""
    p = Path(path)
    return parse_fabric(read_text(p, "InfiniBand fabric file"), str(p))


def parse_fabric(text: str, path: str = "<fabric>") -> Fabric:
    """A fabric from TOML text (module docstring)."""
    data = parse_toml(text, path)
    check_keys(data, _TOP, text=text, path=path)
    sm = data.get("sm", {})
    check_keys(sm, _SM, text=text, path=path, section="sm")
    sm_ports = tuple(_guid(v, "[sm] ports", text, path) for v in sm.get("ports", []))
    tenants: dict[str, TenantPartition] = {}
    used: dict[int, str] = {}
    for name, table in data.get("tenants", {}).items():
        where = f"tenants.{name}"
        if not isinstance(table, dict):
            raise ConfigError(f"[{where}] must be a table", path=path, line=line_of(text, where))
        check_keys(table, _TENANT, text=text, path=path, section=where)
        pkey = table.get("pkey")
        line = line_of(text, where)
        if pkey is None:
            raise ConfigError(f"[{where}] needs a pkey (0x0001..0x7ffe)", path=path, line=line)
        if not 0x0001 <= pkey < DEFAULT_PKEY:
            raise ConfigError(
                f"[{where}] pkey {pkey:#x} is outside 0x0001..0x7ffe (0x7fff is Default)",
                path=path,
                line=line,
            )
        if pkey in used:
            raise ConfigError(
                f"[{where}] pkey {pkey:#06x} is tenant {used[pkey]}'s too: one PKey per tenant",
                path=path,
                line=line,
            )
        used[pkey] = name
        full, limited = (
            tuple(_entry(v, f"[{where}] {key}", text, path) for v in table.get(key, []))
            for key in ("members", "limited")
        )
        tenants[name] = TenantPartition(name, pkey, full, limited)
    return Fabric(sm_ports, tenants, path)


def _entry(value: object, where: str, text: str, path: str) -> str:
    """A member: a GUID (normalised) or a node name (kept)."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {value!r} is not a GUID or a node name", path=path)
    if value.strip().lower().startswith("0x") or ":" in value:
        return _guid(value, where, text, path)
    return value.strip()


def _guid(value: object, where: str, text: str, path: str) -> str:
    guid = guid_text(value) if isinstance(value, str) else None
    if guid is None:
        raise ConfigError(
            f'{where}: {value!r} is not a port GUID (write "0x98039b0300a1b2c2")',
            path=path,
            line=line_of(text, where.rsplit(maxsplit=1)[-1]),
        )
    return guid


def partitions_for(
    fabric: Fabric,
    *,
    policy: Policy | None = None,
    node_guids: Mapping[str, Sequence[str]] | None = None,
    strict: bool = True,
) -> list[Partition]:
    """Default, then one partition per tenant (by PKey). ValueError for a tenant the policy
    does not declare, a node name without facts, a node without an InfiniBand port, or a
    port that is a full and a limited member of one tenant at once. ``strict=False`` leaves
    out the nodes ``node_guids`` does not name (one node judging its own ports: the others'
    GUIDs cannot change what its ports are granted)."""
    nodes = node_guids or {}
    out = [default_partition(fabric.sm_ports)]
    for t in sorted(fabric.tenants.values(), key=lambda t: t.pkey):
        if policy is not None and t.name not in policy.tenants:
            known = ", ".join(sorted(policy.tenants)) or "(none)"
            raise ValueError(f"tenant {t.name} of the fabric file is not in the policy: {known}")
        members: list[Member] = []
        for kind, entries in (("full", t.members), ("limited", t.limited)):
            for entry in entries:
                if strict or entry.startswith("0x") or entry in nodes:
                    members += _resolve(t.name, entry, kind, nodes)
        guids = [m.guid for m in members]
        twice = sorted({g for g in guids if guids.count(g) > 1})
        if twice:
            raise ValueError(f"tenant {t.name}: port {twice[0]} is listed twice")
        out.append(Partition(t.name, t.pkey, tuple(members)))
    return out


def _resolve(
    tenant: str, entry: str, kind: str, nodes: Mapping[str, Sequence[str]]
) -> list[Member]:
    if entry.startswith("0x"):
        return [Member(entry, kind)]
    if entry not in nodes:
        raise ValueError(
            f"tenant {tenant}: node {entry} has no facts here: give them with "
            f"--node {entry}=<snapshot or tree>, or write its port GUIDs"
        )
    if not nodes[entry]:
        raise ValueError(f"tenant {tenant}: node {entry} shows no InfiniBand port")
    return [Member(g, kind, entry) for g in nodes[entry]]


def node_port_guids(host: Host) -> tuple[str, ...]:
    """The port GUIDs of a node's InfiniBand (not RoCE) ports, from its facts (``port_guids``)."""
    out: list[str] = []
    for guid in port_guids(host).values():
        if guid is not None and guid not in out:
            out.append(guid)
    return tuple(out)


def port_guids(host: Host) -> dict[tuple[str, int], str | None]:
    """(device, port) -> port GUID of each InfiniBand (not RoCE) port: GID 0's low 64 bits
    (``pkeys.read_port_pkeys``), else the device's node GUID where the device has one port
    (mlx5: one device per port, port GUID = node GUID; not mlx4's two); None when neither
    says. ``dolmen snapshot`` records no GIDs, so the fallback is what reads a snapshot."""
    from dolmen.facts.infiniband import collect
    from dolmen.net.pkeys import read_port_pkeys

    facts = collect(host)
    tables, _ = read_port_pkeys(host)
    by_port = {(t.device, t.port): t.guid for t in tables}
    per_device: dict[str, int] = {}
    for p in facts.ports:
        per_device[p.device] = per_device.get(p.device, 0) + 1
    out: dict[tuple[str, int], str | None] = {}
    for p in facts.ports:
        if (p.link_layer or "").lower() != "infiniband":
            continue
        guid = by_port.get((p.device, p.port))
        if guid is None and per_device[p.device] == 1 and p.node_guid:
            guid = p.node_guid
        out[(p.device, p.port)] = guid_text(guid) if guid else None
    return out
