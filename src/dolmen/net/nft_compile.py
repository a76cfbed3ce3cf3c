"""The policy compiled to nftables JSON objects (pure): see nft.py for the table's shape.

Objects are written in the form ``nft -j list`` prints them back (a limit's burst, an
``in`` match for ct state, interval elements as values, ranges and prefixes), so that
the compiled table and the live one compare object by object (``verify``), handles and
counter values aside.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dolmen.net.model import JobAccess, Policy
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


def slot_sets(k: int) -> tuple[str, str, str, str]:
    """The sets of job slot ``k``: IPv4 members, IPv6 members, TCP ports, UDP ports."""
    return f"j{k}_v4", f"j{k}_v6", f"j{k}_tcp", f"j{k}_udp"


def compile_objects(policy: Policy, role: Role) -> tuple[list[Json], list[str]]:
    """(objects in ``add`` form, runtime set names); see nft.py."""
    objs: list[Json] = [{"table": {"family": FAMILY, "name": TABLE}}]
    rules: list[Json] = []
    runtime: list[str] = ["slots"]

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
    for k in range(policy.max_jobs):
        names = slot_sets(k)
        objs += [
            _set(names[0], "ipv4_addr", []),
            _set(names[1], "ipv6_addr", []),
            _set(names[2], "inet_service", []),
            _set(names[3], "inet_service", []),
        ]
        runtime += list(names)
        jobs_rules += _pair_rules("jobs", names, f"slot {k}")

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
    """Commands that give ``access`` slot ``slot``: claim it (``create``: fails if taken),
    then flush and fill its four sets, in one batch."""
    v4, v6 = split_families(access.members)
    names = slot_sets(slot)
    cmds: list[Json] = [
        {
            "create": {
                "element": _elems(
                    "slots", [{"elem": {"val": slot, "comment": f"job:{access.job_id}"}}]
                )
            }
        }
    ]
    for name, elems in zip(
        names,
        (
            addr_elems(v4),
            addr_elems(v6),
            port_elems(access.ports.tcp),
            port_elems(access.ports.udp),
        ),
        strict=True,
    ):
        cmds.append({"flush": {"set": {"family": FAMILY, "table": TABLE, "name": name}}})
        if elems:
            cmds.append({"add": {"element": _elems(name, elems)}})
    return cmds


def release_commands(slot: int) -> list[Json]:
    """Commands that empty slot ``slot`` and free it, in one batch."""
    cmds: list[Json] = [
        {"flush": {"set": {"family": FAMILY, "table": TABLE, "name": n}}} for n in slot_sets(slot)
    ]
    cmds.append({"delete": {"element": _elems("slots", [slot])}})
    return cmds


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


def _set(name: str, kind: str, elems: list[Any], *, interval: bool = True) -> Json:
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
