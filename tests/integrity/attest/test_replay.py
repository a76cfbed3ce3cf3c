"""Replay: per bank, EV_NO_ACTION not extended, the StartupLocality rule, the separator
rules, unverifiable PCRs, and the IMA list replayed into PCR 10 (edited lines found)."""

from __future__ import annotations

import hashlib

import pytest

from dolmen.integrity.attest.eventlog import parse_event_log
from dolmen.integrity.attest.ima import parse_ima_list
from dolmen.integrity.attest.replay import replay, reset_value
from tests.integrity.attest import ima_writer
from tests.integrity.attest.eventlog_writer import Log, server_boot


def _expected(log: Log, bank: str, pcr: int, start: bytes) -> bytes:
    value = start
    for index, digests in log.extends():
        if index == pcr:
            value = hashlib.new(bank, value + digests[bank]).digest()
    return value


@pytest.mark.parametrize("locality", [None, 0, 3])
def test_every_bank_replays_from_its_reset_value(locality: int | None) -> None:
    log = server_boot(("sha1", "sha256", "sha384"), locality=locality)
    got = replay(parse_event_log(log.bytes()))
    assert got.problems == ()
    for bank, size in (("sha1", 20), ("sha256", 32), ("sha384", 48)):
        start0 = reset_value(0, size, locality or 0)
        assert start0[-1] == (locality or 0)
        assert got.pcr(bank, 0).value == _expected(log, bank, 0, start0)
        for pcr in (1, 4, 7, 9):
            assert got.pcr(bank, pcr).value == _expected(log, bank, pcr, bytes(size))
        assert got.pcr(bank, 17).value == b"\xff" * size  # DRTM: all ones until a launch
    assert got.pcr("sha256", 2).events == 1  # the separator only
    assert got.pcr("sha512", 0).value is None and "no sha512 bank" in str(
        got.pcr("sha512", 0).reason
    )


def test_a_missing_digest_makes_only_that_pcr_of_that_bank_unverifiable() -> None:
    log = server_boot()
    log.add(4, 0x80000003, b"\x00" * 40, drop="sha256")
    got = replay(parse_event_log(log.bytes()))
    assert got.pcr("sha256", 4).value is None
    assert "has no sha256 digest" in str(got.pcr("sha256", 4).reason)
    assert got.pcr("sha1", 4).value is not None and got.pcr("sha256", 7).value is not None


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda log: log.add(3, 0x4, bytes(4)), "PCR 3 has 2 separators"),
        (lambda log: log.add(7, 0x4, b"\xff\xff\xff\xff"), "error separator into PCR 7"),
        (lambda log: log.add(9, 0x4, b"\x01\x02"), "a separator in PCR 9 whose data is '0102'"),
        (
            lambda log: log.add(5, 0x80000007, b"Exit Boot Services Returned", lie=True),
            "is not the hash of its data",
        ),
        (lambda log: log.locality(3), "StartupLocality event that is malformed"),
    ],
    ids=["two-separators", "error-separator", "junk-separator", "lying-action", "late-locality"],
)
def test_rule_violations_are_problems(edit: object, problem: str) -> None:
    log = server_boot()
    edit(log)  # type: ignore[operator]
    got = replay(parse_event_log(log.bytes()))
    assert any(problem in p for p in got.problems), got.problems


def test_a_log_without_separators_is_a_problem() -> None:
    log = Log().locality(0)
    log.add(0, 0x80000008, b"blob")
    got = replay(parse_event_log(log.bytes()))
    assert (
        "PCR 0 has 0 separators; the firmware ends each of PCRs 0 to 7 with exactly one"
        in got.problems
    )


def test_the_ima_list_continues_pcr_10_in_every_bank() -> None:
    entries = ima_writer.boot_list()
    text = "\n".join(line for line, _ in entries) + "\n"
    ima = parse_ima_list(text)
    assert ima.problems == ()
    assert [e.path for e in ima.entries][2:4] == [
        "/usr/lib/x86_64-linux-gnu/libcuda.so.550.127.05",
        "/opt/my models/run me.py",
    ]
    assert ima.entries[4].violation
    got = replay(parse_event_log(server_boot().bytes()), ima)
    assert got.problems == ()
    for bank in ("sha1", "sha256"):
        assert got.pcr(bank, 10).value == ima_writer.expected_pcr10(entries, bank)
        assert got.pcr(bank, 10).events == len(entries)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("10 abc ima-ng sha256:00 /x", "the template hash is not 40 hex digits"),
        ("x " + "0" * 40 + " ima-ng sha256:00 /x", "PCR 'x' is not 0 to 23"),
        ("10 " + "1" * 40 + " ima-ng", "not 'PCR template-hash template digest path'"),
        ("10 " + "1" * 40 + " ima-ng nohex /x", "is not '<algorithm>:<hex>'"),
        ("10 " + "1" * 40 + " ima-ng sha256:zz /x", "is not '<algorithm>:<hex>'"),
    ],
)
def test_malformed_ima_lines_are_problems(text: str, problem: str) -> None:
    ima = parse_ima_list(text)
    assert any(problem in p for p in ima.problems), ima.problems
    got = replay(parse_event_log(server_boot().bytes()), ima)
    assert got.pcr("sha256", 10).value is None and got.problems


def test_an_edited_ima_line_is_found() -> None:
    good, _ = ima_writer.line("/usr/bin/bash", b"bash")
    edited = good.replace("/usr/bin/bash", "/usr/bin/dash")
    ima = parse_ima_list(edited)
    assert ima.problems == (
        "line 1: its template hash is not the SHA1 of what it lists (an edited line)",
    )


def test_another_template_replays_in_sha1_only() -> None:
    ima = parse_ima_list("10 " + "ab" * 20 + " ima 0123 /boot/x\n")
    got = replay(parse_event_log(server_boot().bytes()), ima)
    assert got.pcr("sha1", 10).value == hashlib.sha1(bytes(20) + bytes.fromhex("ab" * 20)).digest()
    assert got.pcr("sha256", 10).value is None
    assert "template 'ima' is not rebuilt" in str(got.pcr("sha256", 10).reason)
