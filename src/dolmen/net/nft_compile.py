"""The policy compiled to nftables JSON objects (pure): see nft.py for the table's shape.

Objects are written in the form ``nft -j list`` prints them back (a limit's burst, an
``in`` match for ct state, interval elements as values, ranges and prefixes), so that
the compiled table and the live one compare object by object (``verify``), handles and
counter values aside.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from dolmen.net.model import Address, JobAccess, Policy, Ports
from dolmen.net.nft import (
    DROP_PREFIX,
    FAMILY,
    TABLE,
    Json,
    Role,
    addr_elems,
    port_elems,
    split_families,
)

_ICMP = ["destination-unreachable", "time-exceeded", "parameter-problem"]
# IPv6 does not work without neighbour discovery; packet-too-big is path MTU discovery.
_ICMPV6 = [
    "destination-unreachable",
    "packet-too-big",
    "time-exceeded",
    "parameter-problem",
    "nd-router-advert",
    "nd-neighbor-solicit",
    "nd-neighbor-advert",
]
_BURST = 5  # what nft lists for a limit without one


def slot_sets(k: int) -> tuple[str, str]:
    """The sets of job slot ``k``: (member, protocol, port) keys, IPv4 and IPv6. A source
    reaches a port only as a key its job holds (docs/net.md)."""
    return f"j{k}_v4", f"j{k}_v6"


def owner_tag(job_id: str) -> int:
    """A job's 32-bit tag in the ``owners`` set (``slot . tag``): a release names it, so
    a batch meant for one job fails, changing nothing, once the slot is another's."""
    return int.from_bytes(hashlib.sha256(job_id.encode()).digest()[:4], "big")


def profiles(policy: Policy) -> list[tuple[str, Ports]]:
    """The distinct port sets jobs may get: ``[jobs]``'s (``default``), then each tenant
    that names its own. Each has ``max_jobs`` slots of its own (``slot_range``)."""
    out = [("default", policy.ports_for(None))]
    out += [(t.name, policy.ports_for(t.name)) for t in policy.tenants.values() if t.ports]
    return out


def slot_range(policy: Policy, tenant: str) -> range:
    """The slots of the profile a job of ``tenant`` gets (see ``profiles``)."""
    names = [name for name, _ in profiles(policy)]
    i = names.index(tenant) if tenant in names and tenant != "default" else 0
    return range(i * policy.max_jobs, (i + 1) * policy.max_jobs)


def compile_objects(policy: Policy, role: Role) -> tuple[list[Json], list[str]]:
    """(objects in ``add`` form, runtime set names); see nft.py.

    A job slot's sets hold (member address, port) pairs, concatenations with the
    interval flag so that a port range is one element: a member reaches the ports of its
    own job, not every port of the profile (two jobs on one node with ports of their own
    stay apart there). bench/net_set_update.py times a job's start with 1,000 of them.
    """
    objs: list[Json] = [{"table": {"family": FAMILY, "name": TABLE}}]
    rules: list[Json] = []
    runtime: list[str] = ["slots", "owners"]

    m4, m6 = split_families(policy.management.allow_from)
    mports = policy.management.ports
    objs += [
        _set("mgmt_v4", "ipv4_addr", addr_elems(m4)),
        _set("mgmt_v6", "ipv6_addr", addr_elems(m6)),
    ]
    objs += [
        _set("mgmt_tcp", "inet_service", port_elems(mports.tcp)),
        _set("mgmt_udp", "inet_service", port_elems(mports.udp)),
    ]
    objs.append(_set("slots", "mark", [], interval=False))
    objs.append(_set("owners", ["mark", "mark"], [], interval=False))

    jobs_rules: list[Json] = []
    for job in policy.static_jobs:
        if role.member_of(job):
            name = f"job_{job.job_id}"
            objs += _job_sets(name, job)
            jobs_rules += _pair_rules(
                "jobs",
                (f"{name}_v4", f"{name}_v6", f"{name}_tcp", f"{name}_udp"),
                f"job {job.job_id}",
            )
    for pname, _ in profiles(policy):
        for k in slot_range(policy, pname):
            names = slot_sets(k)
            for name, addr in zip(names, ("ipv4_addr", "ipv6_addr"), strict=True):
                objs.append(_set(name, [addr, "inet_proto", "inet_service"], []))
            runtime += names
            jobs_rules += _slot_rules(names, f"slot {k} {pname}")

    objs.append(_chain("jobs"))
    objs.append(
        {
            "chain": {
                "family": FAMILY,
                "table": TABLE,
                "name": "input",
                "type": "filter",
                "hook": "input",
                "prio": 0,
                "policy": "drop",
            }
        }
    )
    ct = {"ct": {"key": "state"}}
    rules += [
        _rule("input", "established", _match(ct, ["established", "related"], "in"), _ACCEPT),
        _rule("input", "invalid", _match(ct, "invalid", "in"), _DROP),
        _rule("input", "loopback", _match({"meta": {"key": "iif"}}, "lo"), _ACCEPT),
        _rule("input", "icmp", _match(_field("icmp", "type"), {"set": _ICMP}), _ACCEPT),
        _rule("input", "icmpv6", _match(_field("icmpv6", "type"), {"set": _ICMPV6}), _ACCEPT),
        *_pair_rules("input", ("mgmt_v4", "mgmt_v6", "mgmt_tcp", "mgmt_udp"), "management"),
        {
            "rule": {
                "family": FAMILY,
                "table": TABLE,
                "chain": "input",
                "comment": "jobs",
                "expr": [{"jump": {"target": "jobs"}}],
            }
        },
        _rule(
            "input",
            "log dropped",
            {"limit": {"rate": _rate(policy)[0], "burst": _BURST, "per": _rate(policy)[1]}},
            None,
            log=True,
        ),
        _rule("input", "default deny", None, _DROP),
    ]
    return objs + jobs_rules + rules, runtime


def job_commands(access: JobAccess, slot: int) -> list[Json]:
    """Commands that give ``access`` slot ``slot``: claim it (``create``: fails if taken)
    and tag it with the job (``owners``), then flush and fill its pair sets, in one
    batch. Members are host addresses (a network is refused: ValueError)."""
    nets = [m for m in access.members if m.prefixlen != m.max_prefixlen]
    if nets:
        raise ValueError(
            f"job {access.job_id}: {nets[0]} is a network; a running job's members are hosts"
        )
    claim = {"elem": {"val": slot, "comment": f"job:{access.job_id}"}}
    cmds: list[Json] = [
        {"create": {"element": _elems("slots", [claim])}},
        {"create": {"element": _elems("owners", [_owner(slot, access.job_id)])}},
    ]
    return cmds + fill_commands(access, slot)


def fill_commands(access: JobAccess, slot: int) -> list[Json]:
    """Flush slot ``slot``'s sets and fill them with ``access``'s (member, protocol, port)
    keys: every member with every port of the job."""
    cmds: list[Json] = []
    for name, members in zip(slot_sets(slot), split_families(access.members), strict=True):
        cmds.append({"flush": {"set": {"family": FAMILY, "table": TABLE, "name": name}}})
        elems = pair_elems(members, access.ports)
        if elems:
            cmds.append({"add": {"element": _elems(name, elems)}})
    return cmds


def release_commands(slot: int, job_id: str) -> list[Json]:
    """Commands that empty slot ``slot`` and free it, in one batch, provided job
    ``job_id`` still holds it: deleting its ``owners`` tag fails the whole batch
    otherwise (the slot was freed and taken by another job meanwhile)."""
    cmds: list[Json] = [{"delete": {"element": _elems("owners", [_owner(slot, job_id)])}}]
    cmds += [
        {"flush": {"set": {"family": FAMILY, "table": TABLE, "name": n}}} for n in slot_sets(slot)
    ]
    cmds.append({"delete": {"element": _elems("slots", [slot])}})
    return cmds


def pair_elems(members: Iterable[Address], ports: Ports) -> list[Json]:
    """(member . protocol . port) elements, as nft lists them back: ``{"concat": [addr,
    "tcp", 29500]}``, a range ``{"concat": [addr, "tcp", {"range": [a, b]}]}``."""
    return [
        {"concat": [str(m.network_address), proto, p]}
        for m in members
        for proto, ranges in (("tcp", ports.tcp), ("udp", ports.udp))
        for p in port_elems(ranges)
    ]


def _owner(slot: int, job_id: str) -> Json:
    return {"concat": [slot, owner_tag(job_id)]}


def _slot_rules(names: tuple[str, str], what: str) -> list[Json]:
    """``ip saddr . meta l4proto . th dport @jK_v4 accept``, and IPv6's."""
    out = []
    for name, addr in zip(names, ("ip", "ip6"), strict=True):
        key = [_field(addr, "saddr"), {"meta": {"key": "l4proto"}}, _field("th", "dport")]
        out.append(_rule("jobs", f"{what} {addr}", _match({"concat": key}, f"@{name}"), _ACCEPT))
    return out


# --- builders -------------------------------------------------------------------------------
_ACCEPT: Json = {"accept": None}
_DROP: Json = {"drop": None}


def _rate(policy: Policy) -> tuple[int, str]:
    n, _, per = policy.log_rate.partition("/")
    return int(n), per


def _job_sets(name: str, job: JobAccess) -> list[Json]:
    v4, v6 = split_families(job.members)
    return [
        _set(f"{name}_v4", "ipv4_addr", addr_elems(v4)),
        _set(f"{name}_v6", "ipv6_addr", addr_elems(v6)),
        _set(f"{name}_tcp", "inet_service", port_elems(job.ports.tcp)),
        _set(f"{name}_udp", "inet_service", port_elems(job.ports.udp)),
    ]


def _pair_rules(chain: str, names: tuple[str, str, str, str], what: str) -> list[Json]:
    """Sources in the address sets reach the ports in the port sets: four rules."""
    v4, v6, tcp, udp = names
    out = []
    for proto_addr, addrs in (("ip", v4), ("ip6", v6)):
        for proto, ports in (("tcp", tcp), ("udp", udp)):
            out.append(
                _rule(
                    chain,
                    f"{what} {proto_addr} {proto}",
                    [
                        _match(_field(proto_addr, "saddr"), f"@{addrs}"),
                        _match(_field(proto, "dport"), f"@{ports}"),
                    ],
                    _ACCEPT,
                )
            )
    return out


def _set(name: str, kind: str | list[str], elems: list[Any], *, interval: bool = True) -> Json:
    body: Json = {"family": FAMILY, "name": name, "table": TABLE, "type": kind}
    if interval:
        body["flags"] = ["interval"]
    if elems:
        body["elem"] = elems
    return {"set": body}


def _chain(name: str) -> Json:
    return {"chain": {"family": FAMILY, "table": TABLE, "name": name}}


def _elems(name: str, elems: Iterable[Any]) -> Json:
    return {"family": FAMILY, "table": TABLE, "name": name, "elem": list(elems)}


def _field(protocol: str, name: str) -> Json:
    return {"payload": {"protocol": protocol, "field": name}}


def _match(left: Json, right: Any, op: str = "==") -> Json:
    return {"match": {"op": op, "left": left, "right": right}}


def _rule(
    chain: str,
    comment: str,
    match: Json | list[Json] | None,
    verdict: Json | None,
    *,
    log: bool = False,
) -> Json:
    expr = match if isinstance(match, list) else ([match] if match is not None else [])
    expr = [*expr, {"counter": None}]
    if log:
        expr.append({"log": {"prefix": DROP_PREFIX}})
    if verdict is not None:
        expr.append(verdict)
    return {
        "rule": {"family": FAMILY, "table": TABLE, "chain": chain, "comment": comment, "expr": expr}
    }
