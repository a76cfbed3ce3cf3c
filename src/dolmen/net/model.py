"""The isolation policy: tenants, jobs and their members, the ports between members, the
management plane, default deny (docs/net.md "Model").

One TOML file, loaded once into frozen values; every enforcement point (nftables here,
Kubernetes NetworkPolicy, InfiniBand partitions) compiles from the same ``Policy``.
Jobs are normally not in the file: their members (the nodes and ranks of a running job)
come from the scheduler when the job starts (``Policy.access``). A ``[job.<id>]`` table
writes a job's members statically, for tests and for fixed services.

Refused at load (policy_file.py), with the file, the line and the valid keys or choices
(as config.py does for dolmen.toml): unknown sections or keys, wrong types, ports outside
1..65535, addresses that do not parse, a job naming a tenant the file does not declare.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Address = ipaddress.IPv4Network | ipaddress.IPv6Network  # a host is a /32 or /128
# The Slurm daemons: slurmctld 6817, slurmd 6818, slurmdbd 6819 (slurm.conf defaults).
SLURM_PORTS = "6817-6819"
RATE = re.compile(r"^([1-9][0-9]{0,5})/(second|minute|hour|day)$")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


@dataclass(frozen=True, order=True)
class PortRange:
    """One port or an inclusive range of them (``29500``, ``40000-40100``)."""

    first: int
    last: int

    def __str__(self) -> str:
        return str(self.first) if self.first == self.last else f"{self.first}-{self.last}"


@dataclass(frozen=True)
class Ports:
    """TCP and UDP ports, each sorted, with overlapping and adjacent ranges merged (so the
    compiled interval sets read back exactly as written)."""

    tcp: tuple[PortRange, ...] = ()
    udp: tuple[PortRange, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.tcp or self.udp)

    def merged(self, other: Ports) -> Ports:
        """Both sets of ports together."""
        return Ports(merge(self.tcp + other.tcp), merge(self.udp + other.udp))

    def outside(self, allowed: Ports) -> list[str]:
        """This set's ports that ``allowed`` does not hold (``tcp 40011``), in order."""
        out = []
        for proto, mine, theirs in (("tcp", self.tcp, allowed.tcp), ("udp", self.udp, allowed.udp)):
            for r in mine:
                if not any(a.first <= r.first and r.last <= a.last for a in theirs):
                    out.append(f"{proto} {r}")
        return out


@dataclass(frozen=True)
class Service:
    """A management-plane service (``ssh``, ``slurm``, ``monitoring``, ``dolmen``)."""

    name: str
    ports: Ports


@dataclass(frozen=True)
class Management:
    """What only the listed hosts reach: SSH, the Slurm daemons, monitoring, the server."""

    allow_from: tuple[Address, ...]
    services: tuple[Service, ...]

    @property
    def ports(self) -> Ports:
        """Every service's ports together."""
        out = Ports()
        for s in self.services:
            out = out.merged(s.ports)
        return out


@dataclass(frozen=True)
class Tenant:
    """A tenant: its jobs may use ``ports`` between their members (the policy's ``[jobs]``
    ports when empty)."""

    name: str
    description: str = ""
    ports: Ports = Ports()


@dataclass(frozen=True)
class JobAccess:
    """What one running job is allowed: its members reach each other on ``ports``.

    Built by ``Policy.access`` from the scheduler's view of a job (or a static
    ``[job.<id>]``); this is what ``nft.job_started`` puts in the job's sets.
    """

    job_id: str
    tenant: str
    members: tuple[Address, ...]
    ports: Ports


@dataclass(frozen=True)
class Policy:
    """The whole policy (see module docstring). ``origin`` is the file it came from."""

    name: str
    management: Management
    job_ports: Ports  # [jobs]: between members of any job, unless its tenant says otherwise
    tenants: Mapping[str, Tenant]
    static_jobs: tuple[JobAccess, ...] = ()
    log_rate: str = "10/minute"  # dropped packets logged at most this often
    max_jobs: int = 64  # job slots compiled per host (jobs running on it at once)
    origin: str = ""
    lines: Mapping[str, int] = field(default_factory=dict)
    # [jobs] rendezvous: each job's own port in it, by net.rendezvous's rule (any tenant)
    rendezvous: PortRange | None = None

    def ports_for(self, tenant: str | None) -> Ports:
        """The ports between members of a job of ``tenant`` (None: no tenant named): its
        profile's (the tenant's own, else ``[jobs]``'s) and the rendezvous range."""
        return self.shared_ports(tenant).merged(
            Ports((self.rendezvous,) if self.rendezvous else ())
        )

    def shared_ports(self, tenant: str | None) -> Ports:
        """The ports every job of ``tenant``'s profile gets (the tenant's own, else
        ``[jobs]``'s): all but the rendezvous range."""
        t = self.tenants.get(tenant or "")
        return t.ports if t is not None and t.ports else self.job_ports

    def own_ports(self, job_id: str, restarts: int, tenant: str | None = None) -> Ports | None:
        """The ports of one Slurm job of ``tenant`` (its id and restart count, as
        slurmctld counts them): its own rendezvous port and its profile's other ports
        (NCCL's, shared by the profile's jobs); None without a rendezvous range (the job
        gets the whole profile)."""
        if self.rendezvous is None:
            return None
        from dolmen.net.rendezvous import rendezvous_port

        port = rendezvous_port(job_id, restarts, self.rendezvous)
        return self.shared_ports(tenant).merged(Ports((PortRange(port, port),)))

    def access(
        self,
        job_id: str,
        members: Iterable[str | Address],
        *,
        tenant: str | None = None,
        ports: Ports | None = None,
    ) -> JobAccess:
        """A running job's access: members as the scheduler gives them (addresses or
        networks), on ``ports`` (the job's own, when the scheduler gives it some: within
        its tenant's; default all of them). ValueError (naming the tenants) for an
        unknown tenant, a bad address, a port the tenant does not have, or a job id that
        is not a name."""
        if not NAME.match(job_id):
            raise ValueError(f"job id {job_id!r}: letters, digits, '_', '.', '-' (63 at most)")
        if tenant is not None and tenant not in self.tenants:
            raise ValueError(f"tenant {tenant!r} is not in the policy; tenants: {_names(self)}")
        nets = tuple(sorted({parse_address(str(m)) for m in members}, key=_net_key))
        allowed = self.ports_for(tenant)
        if ports is not None and ports.outside(allowed):
            raise ValueError(
                f"job {job_id}: {', '.join(ports.outside(allowed))} not among the ports of "
                f"{('tenant ' + tenant) if tenant else '[jobs]'} in policy {self.name}"
            )
        return JobAccess(job_id, tenant or "", nets, allowed if ports is None else ports)


def load_policy(path: str | Path) -> Policy:
    """The policy in ``path``; ConfigError naming file:line and the valid keys otherwise
    (the parser is policy_file.py)."""
    from dolmen.net.policy_file import load

    return load(path)


def parse_policy(text: str, path: str = "<policy>") -> Policy:
    """A policy from TOML text (``path`` names it in errors)."""
    from dolmen.net.policy_file import parse

    return parse(text, path)


def parse_address(text: str) -> Address:
    """An address or network (``10.0.0.5``, ``10.0.0.0/24``, ``fd00::1``); ValueError."""
    try:
        return ipaddress.ip_network(text.strip(), strict=True)
    except ValueError:
        raise ValueError(
            f"{text!r} is not an address or a network with its host bits zero"
        ) from None


def parse_ports(spec: Any) -> tuple[PortRange, ...]:
    """A port, a ``"first-last"`` range or a list of them, merged; ValueError."""
    items = spec if isinstance(spec, list) else [spec]
    out = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise ValueError(f'port {item!r}: write 22, "6817-6819" or a list of them')
        first, _, last = str(item).strip().partition("-")
        try:
            lo, hi = int(first), int(last or first)
        except ValueError:
            raise ValueError(f'port {item!r}: write 22, "6817-6819" or a list of them') from None
        if not 1 <= lo <= hi <= 65535:
            raise ValueError(f"port {item!r} is outside 1..65535 (or its range is reversed)")
        out.append(PortRange(lo, hi))
    return merge(out)


def merge(ranges: Iterable[PortRange]) -> tuple[PortRange, ...]:
    """Sorted, with overlapping and adjacent ranges joined."""
    out: list[PortRange] = []
    for r in sorted(ranges):
        if out and r.first <= out[-1].last + 1:
            out[-1] = PortRange(out[-1].first, max(out[-1].last, r.last))
        else:
            out.append(r)
    return tuple(out)


def _net_key(n: Address) -> tuple[int, int, int]:
    return (n.version, int(n.network_address), n.prefixlen)


def _names(policy: Policy) -> str:
    return ", ".join(sorted(policy.tenants)) or "(none declared)"
