"""What the policy says a probe should do, read from the model, never from the rules.

``net prove`` is only a proof if its expectation does not come from the thing it checks:
this module reads ``dolmen.net.model`` (the policy and the running jobs' access) and
knows nothing of the compiled nftables table. A probe from S to T on PROTO/PORT is
allowed when

- S and T are both members of one running job and PORT is among that job's PROTO ports
  (the job's sets are filled on every member, by its prolog or supervisor), or
- S is in the management plane's ``from`` and PORT is one of its services' PROTO ports;

everything else is the default deny. The ports worth probing are the policy's (the
first and last of each range) and their outer edges (one below, one above: an
off-by-one in a range is a leak or a block exactly there).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from ipaddress import IPv4Address, IPv6Address

from dolmen.net.model import Address, JobAccess, Policy, PortRange, Ports
from dolmen.net.prove import Expect


def _has(ports: Ports, proto: str, port: int) -> PortRange | None:
    for r in ports.tcp if proto == "tcp" else ports.udp:
        if r.first <= port <= r.last:
            return r
    return None


def _within(addr: IPv4Address | IPv6Address, nets: Iterable[Address]) -> bool:
    return any(addr.version == n.version and addr in n for n in nets)


def expectation(
    policy: Policy,
    jobs: Sequence[JobAccess],
    addresses: Mapping[str, IPv4Address | IPv6Address],
) -> Expect:
    """The ``Expect`` of ``plan_probes`` for endpoints named in ``addresses``; ``jobs``
    are the running jobs (static ``[job.<id>]`` ones included by the caller)."""

    def expect(source: str, target: str, proto: str, port: int) -> tuple[bool, str]:
        src, dst = addresses[source], addresses[target]
        for job in jobs:
            if _within(src, job.members) and _within(dst, job.members):
                hit = _has(job.ports, proto, port)
                if hit is not None:
                    return True, f"job {job.job_id}: members, {proto} {hit}"
        if _within(src, policy.management.allow_from):
            for service in policy.management.services:
                hit = _has(service.ports, proto, port)
                if hit is not None:
                    return True, f"management: {service.name} ({proto} {hit}) from a listed host"
        return False, "default deny"

    return expect


def policy_ports(policy: Policy, jobs: Sequence[JobAccess] = ()) -> tuple[int, ...]:
    """Every port the policy names (edges of each range), and the ports just outside; a
    job's own ports too, which may lie inside a range (a rendezvous port, docs/net.md)."""
    all_ports = policy.management.ports.merged(policy.ports_for(None))
    for tenant in policy.tenants.values():
        all_ports = all_ports.merged(policy.ports_for(tenant.name))
    found: set[int] = set()
    for ports in (all_ports, *(job.ports for job in jobs)):
        for r in ports.tcp + ports.udp:
            found.update(p for p in (r.first - 1, r.first, r.last, r.last + 1) if 1 <= p <= 65535)
    return tuple(sorted(found))
