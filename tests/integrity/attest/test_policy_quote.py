"""The policy file and the quote structures, pure: tables of good, bad and hostile input."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dolmen.errors import InputError
from dolmen.integrity.attest.ima import parse_ima_list
from dolmen.integrity.attest.policy import REPLAY, load_policy, render_policy
from dolmen.integrity.attest.quote import QuoteError, parse_attest, parse_signature
from dolmen.integrity.attest.tpm import parse_pcr_listing

P = Path("policy.toml")


def test_a_policy_reads_in_quote_order_and_renders_back() -> None:
    text = f'bank = "sha256"\n[pcrs]\n7 = ["{"ab" * 32}"]\n0 = "{REPLAY}"\n"sha1:10" = "{REPLAY}"\n'
    policy = load_policy(P, text)
    assert [r.key for r in policy.rules] == ["sha1:10", "sha256:0", "sha256:7"]
    assert policy.selection() == (("sha1", (10,)), ("sha256", (0, 7)))
    assert load_policy(P, render_policy(policy)) == policy


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no [pcrs] table: a policy names every PCR it judges (no default accepts)"),
        ("[pcrs]\n", "no [pcrs] table"),
        ("pcrs = 3", "no [pcrs] table"),
        ('bank = "md5"\n[pcrs]\n0 = "replay-must-match"', "bank 'md5' is not one of"),
        ('[pcrs]\n24 = "replay-must-match"', "pcrs key '24' is not '<pcr>' or '<bank>:<pcr>'"),
        ('[pcrs]\n"md5:1" = "replay-must-match"', "pcrs key 'md5:1'"),
        ('[pcrs]\n0 = "accept"', 'must be "replay-must-match" or a non-empty list'),
        ("[pcrs]\n0 = []", "must be"),
        ('[pcrs]\n0 = ["abcd"]', "'abcd' is not a 32-byte sha256 value in hex"),
        ('[pcrs]\n0 = ["zz"]', "'zz' is not a 32-byte"),
        ("[pcrs]\n0 = [1]", "'1' is not a 32-byte"),
        (
            '[pcrs]\n0 = "replay-must-match"\n"sha256:0" = "replay-must-match"',
            "sha256:0 is given twice",
        ),
        ('extra = 1\n[pcrs]\n0 = "replay-must-match"', "unknown keys ['extra']"),
        ("[pcrs\n", "not TOML"),
    ],
)
def test_bad_policies_name_the_entry(text: str, message: str) -> None:
    with pytest.raises(InputError) as e:
        load_policy(P, text)
    assert message in str(e.value) and str(e.value).startswith("policy.toml: ")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "cut off at byte 0"),
        (b"\x00" * 8, "not made by a TPM"),
        (bytes.fromhex("ff5443478014"), "of type 0x8014, not a quote"),
        (
            bytes.fromhex("ff544347801800000000") + bytes(25) + b"\xff\xff\xff\xff",
            "a PCR selection of 4294967295 banks",
        ),
        (bytes.fromhex("ff5443478018ffff"), "cut off"),
    ],
)
def test_bad_attest_structures(data: bytes, message: str) -> None:
    with pytest.raises(QuoteError) as e:
        parse_attest(data)
    assert message in str(e.value)


def test_signature_schemes() -> None:
    assert parse_signature(bytes.fromhex("0014000b0002abcd")).scheme == "rsassa"
    assert parse_signature(bytes.fromhex("0018000b00010100010a")).scheme == "ecdsa"
    with pytest.raises(QuoteError, match="scheme dolmen does not check"):
        parse_signature(bytes.fromhex("0005000b"))


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=200))
def test_junk_is_a_quote_error_or_a_quote(data: bytes) -> None:
    """Bytes from a node being judged: parsed, or refused as QuoteError, nothing else."""
    for parse in (parse_attest, parse_signature):
        try:
            got = parse(b"\xff\x54\x43\x47\x80\x18" + data if parse is parse_attest else data)
        except QuoteError as e:
            assert str(e)
        else:
            assert got is not None


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_junk_ima_lists_never_raise(text: str) -> None:
    ima = parse_ima_list(text)
    assert len(ima.entries) <= len(text.splitlines()) and len(ima.problems) <= 1


def test_the_pcr_listing_of_tpm2_quote() -> None:
    text = (
        "quoted: ff54\nsignature:\n  alg: ecdsa\npcrs:\n  sha256:\n    0 : 0x"
        + "AB" * 32
        + "\n    1 : 0x00\n  sha1:\n    10: 0x"
        + "cd" * 20
        + "\n  md5:\n    3 : 0x"
        + "ee" * 16
        + "\n"
    )
    assert parse_pcr_listing(text) == {"sha256": {0: b"\xab" * 32}, "sha1": {10: b"\xcd" * 20}}
