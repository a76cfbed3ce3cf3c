"""The policy file: TOML to a ``Policy``, refusing what is not one with the file, the line
of the key inside its section and the valid keys or choices (as config.py does for
dolmen.toml). The model and its pure value parsers are model.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from dolmen.config import check_keys, line_of, parse_toml, read_text
from dolmen.errors import ConfigError
from dolmen.net.model import (
    NAME,
    RATE,
    Address,
    Management,
    Policy,
    PortRange,
    Ports,
    Service,
    Tenant,
    parse_address,
    parse_ports,
)

_TOP = {"policy": dict, "management": dict, "jobs": dict, "tenants": dict, "job": dict}
_POLICY = {"name": str, "default": str, "log_rate": str, "max_jobs": int}
_MANAGEMENT = {"from": list, "services": dict}
_PORTS: dict[str, type | tuple[type, ...]] = {"tcp": (int, str, list), "udp": (int, str, list)}
_JOBS: dict[str, type | tuple[type, ...]] = {"rendezvous": (int, str), **_PORTS}
_TENANT: dict[str, type | tuple[type, ...]] = {"description": str, **_PORTS}
_JOB = {"tenant": str, "members": list}


def load(path: str | Path) -> Policy:
    """The policy in ``path``; ConfigError naming file:line and the valid keys otherwise."""
    p = Path(path)
    return parse(read_text(p, "network policy"), str(p))


def parse(text: str, path: str = "<policy>") -> Policy:
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
    if not RATE.match(rate):
        raise fail(
            f"[policy] log_rate {rate!r}: write N/second, N/minute, N/hour or N/day", "log_rate"
        )
    max_jobs = head.get("max_jobs", 64)
    if not 1 <= max_jobs <= 4096:
        raise fail(f"[policy] max_jobs must be 1..4096 (got {max_jobs})", "max_jobs")
    name = head.get("name", Path(path).stem if path != "<policy>" else "policy")
    if not NAME.match(name):
        raise fail(f"[policy] name {name!r}: letters, digits, '_', '.', '-'", "name")

    mgmt = data.get("management", {})
    check_keys(mgmt, _MANAGEMENT, text=text, path=path, section="management")
    allow = tuple(_addresses(mgmt.get("from", []), "management", "from", fail))
    services = []
    for sname, spec in mgmt.get("services", {}).items():
        services.append(Service(sname, _service_ports(spec, sname, text, path, fail)))

    jobs = data.get("jobs", {})
    check_keys(jobs, _JOBS, text=text, path=path, section="jobs")
    job_ports = _ports(jobs, "jobs", fail)

    tenants: dict[str, Tenant] = {}
    for tname, table in data.get("tenants", {}).items():
        if not isinstance(table, dict) or not NAME.match(tname):
            raise fail(
                f"[tenants.{tname}] must be a table named with letters, digits, _ . -", tname
            )
        check_keys(table, _TENANT, text=text, path=path, section=f"tenants.{tname}")
        ports = _ports(table, f"tenants.{tname}", fail)
        tenants[tname] = Tenant(tname, table.get("description", ""), ports)

    rendezvous = _rendezvous(
        jobs, max_jobs, [job_ports, *(t.ports for t in tenants.values())], fail
    )
    mgmt_ = Management(allow, tuple(services))
    policy = Policy(
        name, mgmt_, job_ports, tenants, (), rate, max_jobs, path, rendezvous=rendezvous
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
    return replace(policy, static_jobs=tuple(static))


def _rendezvous(
    jobs: Mapping[str, Any], max_jobs: int, shared: list[Ports], fail: Any
) -> PortRange | None:
    """[jobs] rendezvous (None when not written): one TCP range holding a port of its own
    for each of the ``max_jobs`` jobs a node runs at once, and in no profile's shared
    ports (every job gets those, so they would be nobody's own)."""
    if "rendezvous" not in jobs:
        return None
    try:
        (r,) = parse_ports(jobs["rendezvous"])
    except ValueError as e:
        raise fail(f"[jobs] rendezvous: {e}", "rendezvous", "jobs") from None
    size = r.last - r.first + 1
    if size < max_jobs:
        raise fail(
            f"[jobs] rendezvous {r} holds {size} port(s), fewer than max_jobs = {max_jobs}: jobs"
            f' sharing a node would share a rendezvous port; write "{r.first}-'
            f'{r.first + max_jobs - 1}" or more, or lower max_jobs',
            "rendezvous",
            "jobs",
        )
    clash = sorted(
        {str(x) for p in shared for x in p.tcp if x.first <= r.last and r.first <= x.last}
    )
    if clash:
        raise fail(
            f"[jobs] rendezvous {r} overlaps tcp {', '.join(clash)} of the jobs' shared ports:"
            " every job would get those; take them out of tcp",
            "rendezvous",
            "jobs",
        )
    return r


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
