"""The policy parser: a table of real policies, then truncated, junk and hostile ones."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from dolmen.errors import ConfigError
from dolmen.net.expect import policy_ports
from dolmen.net.model import PortRange, load_policy, merge, parse_policy, parse_ports

FULL = """\
[policy]
name = "cluster-a"
log_rate = "20/minute"
max_jobs = 8

[management]
from = ["10.0.0.10", "10.0.1.0/24", "fd00::10"]
[management.services]
ssh = 22
slurm = "6817-6819"
monitoring = [9100, 9400]
dolmen = 8470
snmp = { udp = 161 }

[jobs]
tcp = [29500, "40000-40100", "40050-40200"]
udp = "50000-50010"

[tenants.alpha]
description = "vision team"
tcp = [29400]

[tenants.beta]

[job.svc1]
tenant = "alpha"
members = ["10.1.0.1", "10.1.0.2"]
"""


def test_a_full_policy() -> None:
    p = parse_policy(FULL, "cluster-a.toml")
    assert p.name == "cluster-a" and p.log_rate == "20/minute" and p.max_jobs == 8
    assert [str(a) for a in p.management.allow_from] == [
        "10.0.0.10/32",
        "10.0.1.0/24",
        "fd00::10/128",
    ]
    assert [str(r) for r in p.management.ports.tcp] == ["22", "6817-6819", "8470", "9100", "9400"]
    assert [str(r) for r in p.management.ports.udp] == ["161"]
    assert [str(r) for r in p.job_ports.tcp] == ["29500", "40000-40200"]  # merged
    assert p.ports_for("alpha").tcp == (PortRange(29400, 29400),)
    assert p.ports_for("beta") == p.job_ports and p.ports_for(None) == p.job_ports
    (svc,) = p.static_jobs
    assert svc.job_id == "svc1" and svc.tenant == "alpha" and svc.ports == p.ports_for("alpha")


def test_defaults_and_a_job_from_the_scheduler() -> None:
    p = parse_policy("", "empty.toml")
    assert p.name == "empty" and p.max_jobs == 64 and p.log_rate == "10/minute"
    assert not p.management.allow_from and not p.job_ports
    job = p.access("1234_5", ["10.0.0.2", "10.0.0.1", "10.0.0.2"])
    assert [str(m) for m in job.members] == ["10.0.0.1/32", "10.0.0.2/32"]
    with pytest.raises(ValueError, match="tenant 'x' is not in the policy"):
        p.access("1", [], tenant="x")
    with pytest.raises(ValueError, match="job id"):
        p.access("1; drop", [])
    with pytest.raises(ValueError, match="not an address"):
        p.access("1", ["node01"])


RENDEZVOUS = """\
[policy]
max_jobs = 8

[jobs]
rendezvous = "29500-29507"   # each job's own port
tcp = "40000-40100"          # NCCL's, shared
udp = 50000

[tenants.alpha]
tcp = "41000-41010"

[job.svc1]
tenant = "alpha"
"""


def test_a_rendezvous_range_gives_each_slurm_job_its_own_port() -> None:
    p = parse_policy(RENDEZVOUS, "r.toml")
    assert p.rendezvous == PortRange(29500, 29507)
    assert [str(r) for r in p.job_ports.tcp] == ["40000-40100"]  # the shared ports alone
    # Every profile holds the range: a job of any tenant may get a port there.
    assert [str(r) for r in p.ports_for(None).tcp] == ["29500-29507", "40000-40100"]
    assert [str(r) for r in p.ports_for("alpha").tcp] == ["29500-29507", "41000-41010"]
    assert p.static_jobs[0].ports == p.ports_for("alpha")
    # Job 12 after one requeue: 29500 + (12 + 997) % 8 = 29501, and the profile's others.
    own = p.own_ports("12", 1, "alpha")
    assert own is not None and [str(r) for r in own.tcp] == ["29501", "41000-41010"]
    assert own.udp == ()  # alpha names no UDP port; [jobs]' 50000 is not alpha's
    default = p.own_ports("12", 1)
    assert default is not None and default.udp == p.job_ports.udp
    job = p.access("slurm-12", ["10.0.0.1"], tenant="alpha", ports=own)
    assert job.ports == own
    assert 29501 in policy_ports(p, [job]) and 29501 not in policy_ports(p)  # net prove probes it
    assert parse_policy(FULL).own_ports("12", 1) is None  # no range: the whole profile


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[policy]\nname = 1\n", ":2: [policy] name must be str, not int"),
        ("[nope]\n", ":1: unknown key 'nope'; valid keys: job, jobs, management, policy, tenants"),
        ('[policy]\ndefault = "allow"\n', ":2: [policy] default must be 'deny'"),
        ('[policy]\nlog_rate = "fast"\n', ":2: [policy] log_rate 'fast': write N/second"),
        ("[policy]\nmax_jobs = 0\n", ":2: [policy] max_jobs must be 1..4096"),
        ("[jobs]\ntcp = 70000\n", ":2: [jobs] tcp: port 70000 is outside 1..65535"),
        (
            '[jobs]\ntcp = "9-1"\n',
            ":2: [jobs] tcp: port '9-1' is outside 1..65535 (or its range is reversed)",
        ),
        ("[jobs]\ntcp = true\n", ":2: [jobs] tcp must be int or str or list, not bool"),
        ('[jobs]\ntcp = ["ssh"]\n', ":2: [jobs] tcp: port 'ssh': write 22"),
        (
            '[management]\nfrom = ["10.0.0.1/8"]\n',
            ":2: [management] from: '10.0.0.1/8' is not an address or a network with its host bits zero",
        ),
        ("[management]\nfrom = [7]\n", ":2: [management] from: 7 is not an address"),
        (
            "[management.services]\nssh = { tcp = 22, sctp = 1 }\n",
            "unknown key 'sctp' in [management.services.ssh]; valid keys: tcp, udp",
        ),
        (
            '[job.a]\ntenant = "ghost"\n',
            ":2: [job.a] tenant 'ghost' is not in the policy; tenants: (none declared)",
        ),
        ('[job.a]\nmembers = ["x"]\n', ":2: [job.a] members: 'x' is not an address"),
        ("[policy]\nmax_jobs = 1\n[job.a]\n[job.b]\n", "2 static jobs, more than max_jobs = 1"),
        (
            '[policy]\nmax_jobs = 8\n[jobs]\nrendezvous = "29500-29503"\n',
            ":4: [jobs] rendezvous 29500-29503 holds 4 port(s), fewer than max_jobs = 8: jobs"
            ' sharing a node would share a rendezvous port; write "29500-29507" or more',
        ),
        (
            '[jobs]\ntcp = [29510, 40000]\nrendezvous = "29500-29600"\n',
            ":3: [jobs] rendezvous 29500-29600 overlaps tcp 29510 of the jobs' shared ports",
        ),
        (
            '[jobs]\nrendezvous = "29500-29600"\n[tenants.a]\ntcp = "29600-29700"\n',
            ":2: [jobs] rendezvous 29500-29600 overlaps tcp 29600-29700",
        ),
        ("[jobs]\nrendezvous = [29500]\n", ":2: [jobs] rendezvous must be int or str, not list"),
        ('[jobs]\nrendezvous = "x"\n', ":2: [jobs] rendezvous: port 'x': write 22"),
        (
            "[tenants.a]\nrendezvous = 1\n",
            "unknown key 'rendezvous' in [tenants.a]; valid keys: description, tcp, udp",
        ),
        ("[policy\n", "not valid TOML"),
        ("\x00\x01", "not valid TOML"),
    ],
)
def test_bad_policies_name_the_file_line_and_choices(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_policy(text, "p.toml")
    assert message in str(e.value) and str(e.value).startswith("p.toml")


def test_files_that_are_not_policies(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such network policy"):
        load_policy(tmp_path / "absent.toml")
    (tmp_path / "dir.toml").mkdir()
    with pytest.raises(ConfigError, match="cannot read the network policy"):
        load_policy(tmp_path / "dir.toml")
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe[policy]")
    with pytest.raises(ConfigError, match="cannot read the network policy"):
        load_policy(tmp_path / "bin.toml")


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        (22, ["22"]),
        ("6817-6819", ["6817-6819"]),
        ([29500, "29501-29510", 29511, 1], ["1", "29500-29511"]),
        ([], []),
        (" 443 ", ["443"]),
    ],
)
def test_ports(spec: object, shown: list[str]) -> None:
    assert [str(r) for r in parse_ports(spec)] == shown


def test_merge_keeps_disjoint_ranges_apart() -> None:
    assert merge([PortRange(5, 9), PortRange(1, 3), PortRange(10, 12)]) == (
        PortRange(1, 3),
        PortRange(5, 12),
    )
    assert ipaddress.ip_network("10.0.0.0/24").num_addresses == 256  # the type members carry
