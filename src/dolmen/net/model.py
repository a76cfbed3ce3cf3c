"""The isolation policy: tenants, jobs and their members, the ports between members, the
management plane, default deny (docs/net.md "Model").

One TOML file, loaded once into frozen values; every enforcement point (nftables here,
Kubernetes NetworkPolicy, InfiniBand partitions) compiles from the same ``Policy``.
Jobs are normally not in the file: their members (the nodes and ranks of a running job)
come from the scheduler when the job starts (``Policy.access``). A ``[job.<id>]`` table
writes a job's members statically, for tests and for fixed services.

Refused at load, with the file, the line and the valid keys or choices (as config.py
does for dolmen.toml): unknown sections or keys, wrong types, ports outside 1..65535,
addresses that do not parse, a job naming a tenant the file does not declare.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dolmen.config import check_keys, line_of, parse_toml, read_text
from dolmen.errors import ConfigError

Address = ipaddress.IPv4Network | ipaddress.IPv6Network  # a host is a /32 or /128
# The Slurm daemons: slurmctld 6817, slurmd 6818, slurmdbd 6819 (slurm.conf defaults).
SLURM_PORTS = "6817-6819"
_RATE = re.compile(r"^([1-9][0-9]{0,5})/(second|minute|hour|day)$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


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

    def ports_for(self, tenant: str | None) -> Ports:
        """The ports between members of a job of ``tenant`` (None: no tenant named)."""
        t = self.tenants.get(tenant or "")
        return t.ports if t is not None and t.ports else self.job_ports

    def access(
        self, job_id: str, members: Iterable[str | Address], *, tenant: str | None = None
    ) -> JobAccess:
        """A running job's access: members as the scheduler gives them (addresses or
        networks). ValueError (naming the tenants) for an unknown tenant, a bad address or
        a job id that is not a name."""
        if not _NAME.match(job_id):
            raise ValueError(f"job id {job_id!r}: letters, digits, '_', '.', '-' (63 at most)")
        if tenant is not None and tenant not in self.tenants:
            raise ValueError(f"tenant {tenant!r} is not in the policy; tenants: {_names(self)}")
        nets = tuple(sorted({parse_address(str(m)) for m in members}, key=_net_key))
        return JobAccess(job_id, tenant or "", nets, self.ports_for(tenant))


# --- parsing -------------------------------------------------------------------------------
_TOP = {"policy": dict, "management": dict, "jobs": dict, "tenants": dict, "job": dict}
_POLICY = {"name": str, "default": str, "log_rate": str, "max_jobs": int}
_MANAGEMENT = {"from": list, "services": dict}
_PORTS: dict[str, type | tuple[type, ...]] = {"tcp": (int, str, list), "udp": (int, str, list)}
_TENANT: dict[str, type | tuple[type, ...]] = {"description": str, **_PORTS}
_JOB = {"tenant": str, "members": list}


def load_policy(path: str | Path) -> Policy:
    """The policy in ``path``; ConfigError naming file:line and the valid keys otherwise."""
    p = Path(path)
    return parse_policy(read_text(p, "network policy"), str(p))


def parse_policy(text: str, path: str = "<policy>") -> Policy:
    """A policy from TOML text (``path`` names it in errors)."""
    data = parse_toml(text, path)
    check_keys(data, _TOP, text=text, path=path)

    def fail(msg: str, key: str, section: str | None = None) -> ConfigError:
        return ConfigError(msg, path=path, line=line_in(text, key, section))

    head = data.get("policy", {})
    check_keys(head, _POLICY, text=text, path=path, section="policy")
    if head.get("default", "deny") != "deny":
        raise fail("[policy] default must be 'deny' (the only default dolmen enforces)", "default")
    rate = head.get("log_rate", "10/minute")
    if not _RATE.match(rate):
        raise fail(
            f"[policy] log_rate {rate!r}: write N/second, N/minute, N/hour or N/day", "log_rate"
        )
    max_jobs = head.get("max_jobs", 64)
    if not 1 <= max_jobs <= 4096:
        raise fail(f"[policy] max_jobs must be 1..4096 (got {max_jobs})", "max_jobs")
    name = head.get("name", Path(path).stem if path != "<policy>" else "policy")
    if not _NAME.match(name):
        raise fail(f"[policy] name {name!r}: letters, digits, '_', '.', '-'", "name")

    mgmt = data.get("management", {})
    check_keys(mgmt, _MANAGEMENT, text=text, path=path, section="management")
    allow = tuple(_addresses(mgmt.get("from", []), "management", "from", fail))
    services = []
    for sname, spec in mgmt.get("services", {}).items():
        services.append(Service(sname, _service_ports(spec, sname, text, path, fail)))

    jobs = data.get("jobs", {})
    check_keys(jobs, _PORTS, text=text, path=path, section="jobs")
    job_ports = _ports(jobs, "jobs", fail)

    tenants: dict[str, Tenant] = {}
    for tname, table in data.get("tenants", {}).items():
        if not isinstance(table, dict) or not _NAME.match(tname):
            raise fail(
                f"[tenants.{tname}] must be a table named with letters, digits, _ . -", tname
            )
        check_keys(table, _TENANT, text=text, path=path, section=f"tenants.{tname}")
        ports = _ports(table, f"tenants.{tname}", fail)
        tenants[tname] = Tenant(tname, table.get("description", ""), ports)

    policy = Policy(
        name, Management(allow, tuple(services)), job_ports, tenants, (), rate, max_jobs, path
    )
    static = []
    for jid, table in data.get("job", {}).items():
        if not isinstance(table, dict):
            raise fail(f"[job.{jid}] must be a table", jid)
        check_keys(table, _JOB, text=text, path=path, section=f"job.{jid}")
        members = _addresses(table.get("members", []), f"job.{jid}", "members", fail)
        try:
            static.append(policy.access(jid, members, tenant=table.get("tenant")))
        except ValueError as e:
            raise fail(f"[job.{jid}] {e}", "tenant", f"job.{jid}") from None
    if len(static) > max_jobs:
        raise fail(f"{len(static)} static jobs, more than max_jobs = {max_jobs}", "job")
    return Policy(name, policy.management, job_ports, tenants, tuple(static), rate, max_jobs, path)


def _service_ports(spec: Any, name: str, text: str, path: str, fail: Any) -> Ports:
    """A service's ports: a port spec (TCP) or a table ``{ tcp = ..., udp = ... }``."""
    if isinstance(spec, dict):
        check_keys(spec, _PORTS, text=text, path=path, section=f"management.services.{name}")
        return _ports(spec, f"management.services.{name}", fail)
    try:
        return Ports(parse_ports(spec))
    except ValueError as e:
        raise fail(f"[management.services] {name}: {e}", name, "management.services") from None


def _ports(table: Mapping[str, Any], section: str, fail: Any) -> Ports:
    got = {}
    for key in ("tcp", "udp"):
        try:
            got[key] = parse_ports(table.get(key, []))
        except ValueError as e:
            raise fail(f"[{section}] {key}: {e}", key, section) from None
    return Ports(got["tcp"], got["udp"])


def _addresses(values: Sequence[Any], section: str, key: str, fail: Any) -> list[Address]:
    out = []
    for v in values:
        try:
            out.append(parse_address(str(v)) if isinstance(v, str) else _bad_address(v))
        except ValueError as e:
            raise fail(f"[{section}] {key}: {e}", key, section) from None
    return out


def line_in(text: str, key: str, section: str | None = None) -> int | None:
    """The line of ``key`` inside ``[section]`` (its header's line when the key is not
    written there, a dotted or inline form), else the first line defining ``key``."""
    if section is None:
        return line_of(text, key)
    header = re.compile(rf"^[ \t]*\[[ \t]*{re.escape(section)}[ \t]*\]", re.M)
    m = header.search(text)
    if m is None:
        return line_of(text, key)
    start = text.count("\n", 0, m.start()) + 1
    lines = text.splitlines()
    key_re = re.compile(rf'^[ \t]*"?{re.escape(key)}"?[ \t]*=')
    for n in range(start, len(lines)):
        if lines[n].lstrip().startswith("["):
            break
        if key_re.match(lines[n]):
            return n + 1
    return start


def _bad_address(v: object) -> Address:
    raise ValueError(f'{v!r} is not an address (write "10.0.0.5" or "10.0.0.0/24")')


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
