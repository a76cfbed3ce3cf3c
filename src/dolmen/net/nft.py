"""The nftables target: a policy and this host's role compiled to one ``inet dolmen`` table,
applied as one JSON batch through ``nft -j -f`` (atomic: all of it or nothing).

The table (docs/net.md "nftables"):

- chain ``input`` (hook input, policy drop): established/related accepted, invalid
  dropped, loopback accepted, the ICMP a network needs (unreachable, time exceeded,
  parameter problem; IPv6 neighbour discovery and packet-too-big), the management plane
  from the listed hosts, ``jump jobs``, then a bounded-rate ``log`` and a counted drop.
- chain ``jobs``: per job slot ``K``, ``ip saddr . meta l4proto . th dport @jK_v4
  accept`` (and IPv6's): the slot's sets hold (member, protocol, port) keys, so a member
  reaches its own job's ports only. Slots are grouped by port profile (``[jobs]``'s
  ports, or a tenant's own: each profile has ``max_jobs`` slots). Every rule has a
  counter and a comment.
- sets: ``mgmt_v4``/``mgmt_v6`` (who reaches management), ``mgmt_tcp``/``mgmt_udp``
  (its ports), per slot ``jK_v4`` and ``jK_v6`` (``addr . inet_proto . inet_service``
  concatenations with intervals), ``slots`` (which slot holds which job: element ``K``
  with comment ``job:<id>``) and ``owners`` (``K . tag``: the job a release must find
  there).

A job starting or ending is ONE atomic batch of set-element updates into a free slot: no
rule is added, rewritten or reloaded, so its cost does not grow with the number of jobs
(bench/net_set_update.py). The slot sets are runtime state: ``verify`` compares the rest
with the policy and reports the slots' jobs; a policy apply carries them over.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dolmen.host import Host
from dolmen.net.model import Address, JobAccess, Policy, PortRange, Ports
from dolmen.tune.settings.nft_io import (
    NftError,
    NftMissing,
    nft_list,
    nft_run,
    replace_table,
    with_live_runtime,
)

# NftError and NftMissing are re-exported: callers catch them from here.
__all__ = [
    "DROP_PREFIX",
    "FAMILY",
    "TABLE",
    "JobUpdate",
    "NftError",
    "NftMissing",
    "Role",
    "Table",
    "active_jobs",
    "addr_elems",
    "compile_table",
    "job_batch",
    "job_ended",
    "job_started",
    "list_table",
    "port_elems",
    "replace_batch",
    "run_batch",
    "split_families",
]

FAMILY = "inet"
TABLE = "dolmen"
DROP_PREFIX = "dolmen-drop "  # the log prefix of dropped packets (kernel log, ulogd)

Json = dict[str, Any]


@dataclass(frozen=True)
class Role:
    """This host in the policy: its own addresses. Static ``[job.<id>]`` jobs with a member
    among them get their slot filled when the table is compiled for this host."""

    addresses: tuple[Address, ...] = ()

    def member_of(self, job: JobAccess) -> bool:
        """Whether this host is one of ``job``'s members."""
        return any(_within(a, m) for a in self.addresses for m in job.members)


@dataclass(frozen=True)
class Table:
    """A compiled ``inet dolmen`` table: the nft JSON objects that make it (``add`` form,
    in order) and the names of its runtime sets (job slots: their elements are the
    scheduler's, not the policy's)."""

    objects: tuple[Json, ...]
    runtime_sets: tuple[str, ...]
    slots: int

    def to_json(self) -> Json:
        """What the ``[nftables]`` setting journals and compares (tune/settings/nftables.py)."""
        return {"objects": list(self.objects), "runtime_sets": list(self.runtime_sets)}


@dataclass(frozen=True)
class JobUpdate:
    """What ``job_started`` / ``job_ended`` did: the slot, and the batch it ran."""

    job_id: str
    slot: int | None
    action: str  # "started" | "ended" | "absent" (ended a job that held no slot)
    batch: Json = field(default_factory=dict)


def compile_table(policy: Policy, role: Role = Role()) -> Table:
    """The table for ``policy`` on a host with ``role`` (pure; see module docstring)."""
    from dolmen.net.nft_compile import compile_objects, profiles

    objects, runtime = compile_objects(policy, role)
    return Table(tuple(objects), tuple(runtime), policy.max_jobs * len(profiles(policy)))


def replace_batch(table: Table, *, live: Sequence[Json] | None = None) -> Json:
    """One batch that makes the host's ``inet dolmen`` table exactly ``table``, carrying
    the ``live`` job slots' elements over so running jobs keep their isolation entries
    (what the ``[nftables]`` setting runs at apply; the benchmark's full reload)."""
    objects = with_live_runtime(table.objects, table.runtime_sets, live)
    return replace_table(FAMILY, TABLE, objects)


def job_batch(access: JobAccess, slot: int) -> Json:
    """The one batch that gives ``access`` slot ``slot`` (pure): the slot claimed with
    ``create`` (fails, changing nothing, if another job holds it) and its sets filled."""
    from dolmen.net.nft_compile import job_commands

    return {"nftables": job_commands(access, slot)}


def job_started(
    host: Host,
    job_id: str,
    members: Iterable[str | Address],
    *,
    policy: Policy,
    tenant: str | None = None,
    ports: Ports | None = None,
) -> JobUpdate:
    """Put a running job's (member, port) pairs in a free slot of its tenant's port
    profile: one atomic set update. ``ports``: the job's own (within its tenant's; default
    all of them). A job that already holds a slot gets its pairs refreshed there.
    NftError when no slot is free or nft refuses, ValueError for a member that is a
    network or a port outside the tenant's (nothing changed either way: fail closed)."""
    from dolmen.net.nft_compile import slot_range
    from dolmen.net.nft_jobs import start

    access = policy.access(job_id, members, tenant=tenant, ports=ports)
    return start(host, access, slot_range(policy, access.tenant))


def job_ended(host: Host, job_id: str) -> JobUpdate:
    """Empty the job's slot and free it: one atomic set update (``absent`` when the job
    held none: a second epilog, or a table reloaded since)."""
    from dolmen.net.nft_jobs import end

    return end(host, job_id)


def active_jobs(host: Host) -> dict[str, int]:
    """Job id -> slot, as the live ``slots`` set says (empty when there is no table)."""
    from dolmen.net.nft_jobs import slots_in_use

    return {job: slot for slot, job in slots_in_use(host).items()}


# --- nft itself ---------------------------------------------------------------------------
def run_batch(host: Host, batch: Mapping[str, Any]) -> None:
    """Run one JSON batch through ``nft -j`` as one transaction; NftError (nothing changed)
    when nft refuses it, NftMissing on a host without nft."""
    nft_run(host, batch)


def list_table(host: Host) -> list[Json] | None:
    """The live ``inet dolmen`` table as ``nft -j list table`` prints it, None when there
    is none; NftMissing on a host without nft."""
    return nft_list(host, FAMILY, TABLE)


def _within(a: Address, b: Address) -> bool:
    if isinstance(a, ipaddress.IPv4Network) and isinstance(b, ipaddress.IPv4Network):
        return a.subnet_of(b)
    if isinstance(a, ipaddress.IPv6Network) and isinstance(b, ipaddress.IPv6Network):
        return a.subnet_of(b)
    return False


def port_elems(ports: Sequence[PortRange]) -> list[Any]:
    """Interval-set elements of ports, as nft lists them back: 22, {"range": [a, b]}."""
    return [p.first if p.first == p.last else {"range": [p.first, p.last]} for p in ports]


def addr_elems(nets: Iterable[Address]) -> list[Any]:
    """Interval-set elements of addresses, as nft lists them back: a host is its address,
    a network ``{"prefix": {"addr": ..., "len": ...}}``."""
    out: list[Any] = []
    for n in nets:
        if n.prefixlen == n.max_prefixlen:
            out.append(str(n.network_address))
        else:
            out.append({"prefix": {"addr": str(n.network_address), "len": n.prefixlen}})
    return out


def split_families(nets: Iterable[Address]) -> tuple[list[Address], list[Address]]:
    """(IPv4, IPv6) networks."""
    v4: list[Address] = [n for n in nets if isinstance(n, ipaddress.IPv4Network)]
    v6: list[Address] = [n for n in nets if isinstance(n, ipaddress.IPv6Network)]
    return v4, v6
