"""partitions.conf (dolmen.net.infiniband) held to opensm's grammar, the fabric file
(dolmen.net.ib_fabric), and the grants a port's table is compared with."""

from __future__ import annotations

import pytest

from dolmen.errors import ConfigError
from dolmen.net.ib_fabric import parse_fabric, partitions_for
from dolmen.net.infiniband import (
    Member,
    Partition,
    default_partition,
    granted,
    guid_text,
    render_partitions,
)
from dolmen.net.model import parse_policy
from tests.net.opensm_grammar import GrammarError, parse

SM = "0x98039b0300a1b2c0"
A, B, C, S = (f"0x98039b0300a1b2{x}" for x in ("c2", "c3", "c9", "d0"))
FABRIC = f"""
[sm]
ports = ["{SM}"]

[tenants.research]
pkey = 0x0101
members = ["{A}", "gpu01"]
limited = ["{S}"]

[tenants.vision]
pkey = 0x0102
members = ["9803:9b03:00a1:b2c9"]
"""
POLICY = """
[tenants.research]
[tenants.vision]
"""


def _parts() -> list[Partition]:
    return partitions_for(
        parse_fabric(FABRIC), policy=parse_policy(POLICY), node_guids={"gpu01": [B]}
    )


def test_render_is_opensm_grammar() -> None:
    text = render_partitions(_parts(), header="written by dolmen\nfrom test")
    got = parse(text)
    assert [(s["name"], s["pkey"], s["defmember"]) for s in got] == [
        ("Default", 0x7FFF, "limited"),
        ("research", 0x0101, "limited"),
        ("vision", 0x0102, "limited"),
    ]
    assert got[0]["ports"] == [("ALL", "limited"), ("SELF", "full"), (SM, "full")]
    assert got[0]["flags"] == ["ipoib"]
    assert got[1]["ports"] == [(A, "full"), (B, "full"), (S, "limited")]
    assert got[2]["ports"] == [(C, "full")]


def test_many_members_stay_under_opensm_line_buffer() -> None:
    members = tuple(Member(f"0x{i:016x}") for i in range(1, 2001))
    text = render_partitions([default_partition([]), Partition("big", 0x10, members)])
    [_, big] = parse(text)
    assert len(big["ports"]) == 2000  # type: ignore[arg-type]


def test_empty_partition() -> None:
    [part] = parse(render_partitions([Partition("empty", 0x20)]))
    assert part["ports"] == []


@pytest.mark.parametrize(
    ("parts", "why"),
    [
        ([Partition("a", 0x10), Partition("b", 0x10)], "same PKey"),
        ([Partition("a b", 0x10)], "partition name"),
        ([Partition("a=b", 0x10)], "partition name"),
        ([Partition("a", 0x0)], "outside"),
        ([Partition("a", 0x8001)], "outside"),
        ([Partition("a", 0x10, (Member("0x12"),))], "invalid"),
        ([Partition("a", 0x10, (Member(A, "sometimes"),))], "invalid"),
        ([Partition("a", 0x10, (Member(A), Member(A, "limited")))], "twice"),
        ([Partition("a", 0x10, defmember="both")], "defmember"),
    ],
)
def test_render_refuses(parts: list[Partition], why: str) -> None:
    with pytest.raises(ValueError, match=why):
        render_partitions(parts)


@pytest.mark.parametrize(
    "text",
    [
        "Default=0x7fff : ALL=limited, SELF=full",  # no ';'
        "Default=0x7fff ALL ;",  # no ':'
        "Default=0x7fff : ALL=sometimes ;",
        "Default=0xfffff : ALL ;",
        "Default=0x7fff, bogus : ALL ;",
        "Default=0x7fff : 0xZZ ;",
        "Default=0x7fff : ALL,, SELF ;",
        "x=0x1 : a : b : c ;",
        "x=0x1 : " + "0x" + "1" * 5000 + " ;",
    ],
)
def test_grammar_refuses_junk(text: str) -> None:
    """The grammar checker is not a rubber stamp."""
    with pytest.raises(GrammarError):
        parse(text)


def test_grammar_reads_the_manual_examples() -> None:
    manual = """
    Default=0x7fff : ALL, SELF=full ;
    NewPartition , ipoib : 0x123456=full, 0x3456789034=limited,  0x2134af2306 ;
    YetAnotherOne = 0x300 : SELF=full ;
    ShareIO = 0x80 , defmember=full : 0x123451, 0x123452;
    ShareIO = 0x80 : defmember=limited : 0x123456, 0x123457, 0x123458=full;
    """
    got = parse(manual)
    assert len(got) == 5 and got[3]["ports"] == [("0x123451", "full"), ("0x123452", "full")]


@pytest.mark.parametrize(
    ("text", "guid"),
    [
        ("0x98039B0300A1B2C2", A),
        ("9803:9b03:00a1:b2c2", A),
        ("98039b0300a1b2c2", A),
        ("0x2c9", "0x00000000000002c9"),
        ("0x0", None),
        ("0x98039b0300a1b2c2ff", None),
        ("node01", None),
        ("", None),
    ],
)
def test_guid_text(text: str, guid: str | None) -> None:
    assert guid_text(text) == guid


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[tenants.a]\n", "needs a pkey"),
        ("[tenants.a]\npkey = 0x7fff\n", "outside"),
        ("[tenants.a]\npkey = 0\n", "outside"),
        ("[tenants.a]\npkey = 1\n[tenants.b]\npkey = 1\n", "one PKey per tenant"),
        ('[tenants.a]\npkey = 1\nmembers = ["0xzz"]\n', "not a port GUID"),
        ("[tenants.a]\npkey = 1\nmembers = [3]\n", "not a GUID or a node name"),
        ("[tenants.a]\npkey = 1\nfull = []\n", "unknown key 'full'"),
        ('[sm]\nports = ["nope:"]\n', "not a port GUID"),
        ("[switches]\n", "unknown key 'switches'"),
        ("[tenants.a\n", "not valid TOML"),
    ],
)
def test_fabric_refuses(text: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        parse_fabric(text, "fabric.toml")


@pytest.mark.parametrize(
    ("nodes", "policy", "why"),
    [
        ({}, POLICY, "node gpu01 has no facts here"),
        ({"gpu01": []}, POLICY, "shows no InfiniBand port"),
        ({"gpu01": [B]}, "[tenants.research]\n", "tenant vision of the fabric file is not in"),
        ({"gpu01": [A]}, POLICY, "listed twice"),
    ],
)
def test_partitions_refuse(nodes: dict[str, list[str]], policy: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        partitions_for(parse_fabric(FABRIC), policy=parse_policy(policy), node_guids=nodes)


@pytest.mark.parametrize(
    ("guid", "is_sm", "grants"),
    [
        (A, False, {0x7FFF: "limited", 0x0101: "full"}),
        (S, False, {0x7FFF: "limited", 0x0101: "limited"}),
        (C, False, {0x7FFF: "limited", 0x0102: "full"}),
        (SM, False, {0x7FFF: "full"}),  # a management port: full in Default
        ("0x0000000000000001", True, {0x7FFF: "full"}),  # the SM's own port (SELF)
        ("0x0000000000000002", False, {0x7FFF: "limited"}),  # any other end port (ALL)
    ],
)
def test_granted(guid: str, is_sm: bool, grants: dict[int, str]) -> None:
    assert granted(_parts(), guid, is_sm=is_sm) == grants


def test_fabric_error_names_the_line() -> None:
    with pytest.raises(ConfigError, match=r"^fabric.toml:4: \[tenants.b\] pkey"):
        parse_fabric("[tenants.a]\npkey = 1\n\n[tenants.b]\npkey = 0x7fff\n", "fabric.toml")
