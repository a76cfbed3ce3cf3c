"""The compiled table and the parsers of nft's and ip's JSON, without a kernel."""

from __future__ import annotations

import json

import pytest

from dolmen.net import nft
from dolmen.net.jobs import stale_jobs
from dolmen.net.model import Ports, parse_address, parse_policy, parse_ports
from dolmen.net.nft_change import diff
from dolmen.net.nft_compile import job_commands, owner_tag, release_commands
from dolmen.net.nft_jobs import parse_slots, release_batch
from dolmen.net.role import parse_ip_addr
from dolmen.tune.settings import PROFILE_SECTIONS, SETTINGS
from dolmen.tune.settings.nft_io import add_form, canonical, with_live_runtime
from tests.net.test_nft_netns import POLICY


def _rules(table: nft.Table) -> list[tuple[str, str]]:
    return [(o["rule"]["chain"], o["rule"]["comment"]) for o in table.objects if "rule" in o]


def test_the_input_chain_denies_by_default_after_what_a_network_needs() -> None:
    policy = parse_policy(POLICY)
    table = nft.compile_table(policy, nft.Role((parse_address("10.77.0.1"),)))
    inputs = [c for ch, c in _rules(table) if ch == "input"]
    assert inputs == [
        "established", "invalid", "loopback", "icmp", "icmpv6", "management ip tcp",
        "management ip udp", "management ip6 tcp", "management ip6 udp", "jobs",
        "log dropped", "default deny",
    ]  # fmt: skip
    chain = next(o["chain"] for o in table.objects if o.get("chain", {}).get("name") == "input")
    assert chain["hook"] == "input" and chain["policy"] == "drop"
    jobs = [c for ch, c in _rules(table) if ch == "jobs"]
    assert jobs[:4] == ["job static1 ip tcp", "job static1 ip udp", "job static1 ip6 tcp",
                        "job static1 ip6 udp"]  # fmt: skip
    assert len(jobs) == 4 + 2 * policy.max_jobs and table.slots == 4
    for o in table.objects:  # every rule but the jump is counted
        if "rule" in o and o["rule"]["comment"] != "jobs":
            assert {"counter": None} in o["rule"]["expr"]
    log = next(
        o["rule"]["expr"]
        for o in table.objects
        if o.get("rule", {}).get("comment") == "log dropped"
    )
    assert log[0] == {"limit": {"rate": 5, "burst": 5, "per": "second"}}
    assert log[2] == {"log": {"prefix": nft.DROP_PREFIX}}
    assert {"slots", "owners", "j3_v4", "j3_v6"} <= set(table.runtime_sets)
    assert "mgmt_tcp" not in table.runtime_sets  # the management ports are the policy's
    slot0 = [o["rule"]["expr"][0] for o in table.objects
             if o.get("rule", {}).get("comment") == "slot 0 default ip"]  # fmt: skip
    assert slot0 == [{"match": {"op": "==", "left": {"concat": [
        {"payload": {"protocol": "ip", "field": "saddr"}}, {"meta": {"key": "l4proto"}},
        {"payload": {"protocol": "th", "field": "dport"}}]}, "right": "@j0_v4"}}]  # fmt: skip


def test_a_static_job_is_compiled_only_where_this_host_is_a_member() -> None:
    policy = parse_policy(POLICY)
    elsewhere = nft.compile_table(policy, nft.Role((parse_address("10.9.0.1"),)))
    assert not any(c.startswith("job static1") for _, c in _rules(elsewhere))
    assert not any("job static1" in c for _, c in _rules(nft.compile_table(policy)))


def test_a_job_is_one_batch_of_element_updates_and_no_rule() -> None:
    policy = parse_policy(POLICY)
    with pytest.raises(ValueError, match=r"10\.1\.0\.0/16 is a network"):
        job_commands(policy.access("1", ["10.1.0.0/16"]), 0)
    access = policy.access("4242", ["10.0.0.7", "10.0.0.8", "fd00::7"])
    cmds = job_commands(access, 2)
    assert cmds[0] == {"create": {"element": {"family": "inet", "table": "dolmen",
                       "name": "slots", "elem": [{"elem": {"val": 2, "comment": "job:4242"}}]}}}  # fmt: skip
    tag = owner_tag("4242")
    assert cmds[1]["create"]["element"]["elem"] == [{"concat": [2, tag]}]
    added = {c["add"]["element"]["name"]: c["add"]["element"]["elem"] for c in cmds if "add" in c}
    ranged = {"range": [40000, 40100]}
    assert added == {
        "j2_v4": [{"concat": ["10.0.0.7", "tcp", 29500]}, {"concat": ["10.0.0.7", "tcp", ranged]},
                  {"concat": ["10.0.0.7", "udp", 29500]},
                  {"concat": ["10.0.0.8", "tcp", 29500]}, {"concat": ["10.0.0.8", "tcp", ranged]},
                  {"concat": ["10.0.0.8", "udp", 29500]}],
        "j2_v6": [{"concat": ["fd00::7", "tcp", 29500]}, {"concat": ["fd00::7", "tcp", ranged]},
                  {"concat": ["fd00::7", "udp", 29500]}],
    }  # fmt: skip
    assert all(next(iter(c)) in ("create", "flush", "add") for c in cmds)
    assert all("rule" not in body for c in cmds for body in c.values())
    released = release_commands(2, "4242")
    assert released[0] == {"delete": {"element": {"family": "inet", "table": "dolmen",
                           "name": "owners", "elem": [{"concat": [2, tag]}]}}}  # fmt: skip
    assert released[-1] == {"delete": {"element": {"family": "inet", "table": "dolmen",
                            "name": "slots", "elem": [2]}}}  # fmt: skip
    assert owner_tag("4243") != tag


def test_a_job_gets_its_own_ports_within_its_tenants_only() -> None:
    policy = parse_policy(POLICY)
    own = Ports(parse_ports("40000-40009"), ())
    access = policy.access("7", ["10.0.0.7"], ports=own)
    added = {c["add"]["element"]["name"]: c["add"]["element"]["elem"]
             for c in job_commands(access, 0) if "add" in c}  # fmt: skip
    assert added == {"j0_v4": [{"concat": ["10.0.0.7", "tcp", {"range": [40000, 40009]}]}]}
    with pytest.raises(ValueError, match=r"tcp 40100-40101, udp 1 not among the ports of \[jobs\]"):
        policy.access("7", ["10.0.0.7"], ports=Ports(parse_ports("40100-40101"), parse_ports(1)))


def test_stale_slots_are_the_schedulers_unknown_jobs_only() -> None:
    policy = parse_policy(POLICY)
    slots = {0: "slurm-1", 1: "slurm-2", 2: "local-3", 3: "slurm-9", 4: "static1"}
    assert stale_jobs(slots, policy, "slurm", {"slurm-1"}, keep=("slurm-9",)) == {1: "slurm-2"}
    assert stale_jobs(slots, policy, "local", set()) == {2: "local-3"}
    assert stale_jobs(slots, policy, "slurm", None) == {}  # the scheduler could not say
    assert release_batch({1: "slurm-2"}) == {"nftables": release_commands(1, "slurm-2")}


def test_compare_ignores_handles_counters_order_and_job_slots() -> None:
    table = nft.compile_table(parse_policy(POLICY))
    live = [json.loads(json.dumps(o)) for o in reversed(table.objects)]  # sets, chains shuffled
    live = [o for o in live if "rule" not in o] + [o for o in table.objects if "rule" in o]
    for o in live:
        body = next(iter(o.values()))
        body["handle"] = 7
        if "rule" in o:
            body["expr"] = [{"counter": {"packets": 3, "bytes": 9}} if e == {"counter": None} else e
                            for e in body["expr"]]  # fmt: skip
        if o.get("set", {}).get("name") == "j1_v4":
            body["elem"] = [{"concat": ["10.5.5.5", "tcp", 29500]}]  # a running job's keys
    assert diff(live, table).empty
    live = [o for o in live if o.get("rule", {}).get("comment") != "loopback"]
    assert diff(live, table).added == ('rule input "loopback"',)
    mgmt = next(o["set"] for o in live if o.get("set", {}).get("name") == "mgmt_v4")
    mgmt["elem"] = ["10.66.0.1"]
    d = diff(live, table)
    assert "set mgmt_v4 (ipv4_addr): 10.66.0.1" in d.removed


def test_a_reload_carries_the_running_jobs_over() -> None:
    table = nft.compile_table(parse_policy(POLICY))
    pair = {"concat": ["10.5.5.5", "tcp", 29500]}
    key = ["ipv4_addr", "inet_proto", "inet_service"]
    live = [{"set": {"name": "j0_v4", "type": key, "elem": [pair]}},
            {"set": {"name": "mgmt_v4", "type": "ipv4_addr", "elem": ["10.6.6.6"]}}]  # fmt: skip
    out = with_live_runtime(table.objects, table.runtime_sets, live)
    sets = {o["set"]["name"]: o["set"].get("elem") for o in out if "set" in o}
    assert sets["j0_v4"] == [pair] and sets["mgmt_v4"] == ["10.77.0.10"]
    assert canonical(add_form(out), table.runtime_sets) == canonical(
        table.objects, table.runtime_sets
    )


@pytest.mark.parametrize(
    ("text", "slots"),
    [
        (
            '{"nftables": [{"metainfo": {}}, {"set": {"name": "slots", "elem": [{"elem": {"val": 3, "comment": "job:77"}}, {"elem": {"val": 0, "comment": "job:a.b-1"}}]}}]}',
            {3: "77", 0: "a.b-1"},
        ),
        ('{"nftables": [{"set": {"name": "slots"}}]}', {}),
        (
            '{"nftables": [{"set": {"name": "slots", "elem": [5, {"elem": {"val": "x"}}, {"elem": {"val": 1, "comment": "other"}}]}}]}',
            {},
        ),
        ('{"nftables": "junk"}', {}),
    ],
)
def test_parse_slots(text: str, slots: dict[int, str]) -> None:
    assert parse_slots(text) == slots


@pytest.mark.parametrize("text", ["", "{", "[]x", '{"nftables": [{"set"'])
def test_parse_slots_refuses_what_is_not_nft_json(text: str) -> None:
    with pytest.raises(nft.NftError):
        parse_slots(text)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            '[{"ifname": "lo", "addr_info": [{"family": "inet", "local": "127.0.0.1"}, {"local": "::1"}]},'
            ' {"ifname": "eth0", "addr_info": [{"local": "10.0.0.5", "prefixlen": 24},'
            ' {"local": "fe80::1"}, {"local": "fd00::5"}]}]',
            ["10.0.0.5/32", "fd00::5/128"],
        ),
        ("[]", []),
        ("", []),
        ('[{"addr_info": [{"local": "not-an-ip"}]}, 7, {"addr_info": "x"}]', []),
        ('{"ifname": "eth0"}', []),
    ],
)
def test_parse_ip_addr(text: str, shown: list[str]) -> None:
    assert [str(a) for a in parse_ip_addr(text)] == shown


def test_nftables_is_a_setting_of_the_engine_and_not_a_profile_section() -> None:
    assert "nftables" in SETTINGS and "nftables" not in PROFILE_SECTIONS
    s = SETTINGS["nftables"]
    with pytest.raises(ValueError, match="not a compiled table"):
        s.validate("inet dolmen", "{}", {})
    with pytest.raises(ValueError, match="family"):
        s.key("bridge x y")
    assert s.show(None) == "(no table)"
