"""Quote and verify end to end on a software TPM (swtpm): the TPM is extended with what a
built event log and IMA list say, quoted over a fresh nonce, and verified; then the
tamper cases: a stale nonce, a wrong AK, an edited log, edited PCR values, an unverifiable
PCR, a value outside the policy, a measurement the log does not show (the fixtures are in
conftest.py: one TPM, one boot, one quote for the session). tpm2_checkquote is run on the same quotes as an independent verifier."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

from dolmen.host.live import LiveHost
from dolmen.integrity.attest import tpm
from dolmen.integrity.attest.bundle import parse_bundle
from tests.integrity.attest.cli_run import NONCE, run, verify
from tests.integrity.attest.eventlog_writer import server_boot


def checkquote(quote: Path, ak_pub: Path, nonce: str, folder: Path) -> int:
    bundle = parse_bundle(quote.read_text(), str(quote))
    (folder / "m").write_bytes(bundle.attest)
    (folder / "s").write_bytes(bundle.signature)
    argv: Sequence[str] = [
        "tpm2_checkquote",
        "-u",
        str(ak_pub),
        "-m",
        str(folder / "m"),
        "-s",
        str(folder / "s"),
        "-q",
        nonce,
        "-g",
        "sha256",
    ]
    return subprocess.run(argv, capture_output=True, timeout=30, check=False).returncode


def test_a_good_node_is_trusted_and_tpm2_checkquote_agrees(
    quoted: Path, ak: tuple[Path, Path], node: Path, tmp_path: Path
) -> None:
    rc, doc = verify(quoted, ak[1], node)
    assert rc == 0 and doc["trusted"], doc["problems"]
    statuses = {p["pcr"]: p["status"] for p in doc["pcrs"]}
    assert statuses == {**{f"sha256:{i}": "match" for i in range(11)}, "sha1:10": "match"}
    assert doc["quote"]["nonce"] == NONCE
    assert checkquote(quoted, ak[1], NONCE, tmp_path) == 0


def test_a_stale_nonce_fails_here_and_in_tpm2_checkquote(
    quoted: Path, ak: tuple[Path, Path], node: Path, tmp_path: Path
) -> None:
    rc, doc = verify(quoted, ak[1], node, nonce="b2" * 32)
    assert rc == 1 and any("a stale or replayed quote" in p for p in doc["problems"])
    assert checkquote(quoted, ak[1], "b2" * 32, tmp_path) != 0


def test_a_wrong_ak_fails_here_and_in_tpm2_checkquote(
    quoted: Path, swtpm: str, node: Path, tmp_path: Path
) -> None:
    _, other = tpm.create_ak(LiveHost(), tmp_path, swtpm)
    rc, doc = verify(quoted, other, node)
    assert rc == 1 and any("does not verify with this AK" in p for p in doc["problems"])
    assert checkquote(quoted, other, NONCE, tmp_path) != 0


def test_edited_pcr_values_in_the_quote_document_fail(
    quoted: Path, ak: tuple[Path, Path], node: Path, tmp_path: Path
) -> None:
    doc = json.loads(quoted.read_text())
    doc["pcrs"]["sha256"]["7"] = "00" * 32
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    rc, verdict = verify(edited, ak[1], node)
    assert rc == 1 and any("not the ones the TPM signed" in p for p in verdict["problems"])
    assert all(p["status"] == "unverifiable" for p in verdict["pcrs"])


def test_a_tampered_log_fails(
    quoted: Path, ak: tuple[Path, Path], node: Path, tmp_path: Path
) -> None:
    # One byte of the digest of PCR 5's action event flipped: the replay no longer reaches
    # the TPM's value, and the digest is not the hash of the event's text either.
    log = server_boot(locality=0)
    bad = tmp_path / "eventlog"
    data = bytearray(log.bytes())
    at = data.find(b"Exit Boot Services Invocation") - 4 - 32
    data[at] ^= 1
    bad.write_bytes(bytes(data))
    rc, doc = verify(quoted, ak[1], node, "--eventlog", str(bad), "--ima", str(node / "ima"))
    assert rc == 1
    statuses = {p["pcr"]: p["status"] for p in doc["pcrs"]}
    assert statuses["sha256:5"] == "mismatch" and statuses["sha256:4"] == "match"
    assert any("is not the hash of its data" in p for p in doc["problems"])


def test_a_log_cut_short_makes_every_pcr_unverifiable(
    quoted: Path, ak: tuple[Path, Path], node: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "eventlog"
    bad.write_bytes((node / "eventlog").read_bytes()[:-10])
    rc, doc = verify(quoted, ak[1], node, "--eventlog", str(bad))
    assert rc == 1 and {p["status"] for p in doc["pcrs"]} == {"unverifiable"}


def test_a_pcr_without_a_digest_for_the_bank_is_unverifiable_not_accepted(
    quoted: Path, ak: tuple[Path, Path], node: Path, tmp_path: Path
) -> None:
    log = server_boot(locality=0)
    log.add(4, 0x80000003, b"\x00" * 40, drop="sha256")
    bad = tmp_path / "eventlog"
    bad.write_bytes(log.bytes())
    rc, doc = verify(quoted, ak[1], node, "--eventlog", str(bad), "--ima", str(node / "ima"))
    assert rc == 1
    four = next(p for p in doc["pcrs"] if p["pcr"] == "sha256:4")
    assert four["status"] == "unverifiable" and "has no sha256 digest" in four["reason"]


def test_a_log_claiming_locality_3_on_a_tpm_started_at_0_fails(
    quoted: Path, ak: tuple[Path, Path], node: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "eventlog"
    bad.write_bytes(server_boot(locality=3).bytes())
    rc, doc = verify(quoted, ak[1], node, "--eventlog", str(bad), "--ima", str(node / "ima"))
    assert rc == 1 and {p["pcr"] for p in doc["pcrs"] if p["status"] == "mismatch"} == {"sha256:0"}


def test_an_edited_ima_line_fails(
    quoted: Path, ak: tuple[Path, Path], node: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "ima"
    bad.write_text((node / "ima").read_text().replace("/usr/bin/bash", "/usr/bin/dash"))
    rc, doc = verify(quoted, ak[1], node, "--eventlog", str(node / "eventlog"), "--ima", str(bad))
    assert rc == 1 and any("an edited line" in p for p in doc["problems"])


def test_a_golden_policy_holds_and_a_value_outside_it_fails(
    quoted: Path, ak: tuple[Path, Path], node: Path, tmp_path: Path
) -> None:
    pinned = tmp_path / "pinned.toml"
    rc, text = run(
        "policy",
        "--eventlog",
        str(node / "eventlog"),
        "--pcrs",
        "sha256:0-9",
        "--pin",
        "-o",
        str(pinned),
    )
    assert rc == 0, text
    rc, doc = verify(quoted, ak[1], node, "--policy", str(pinned))
    assert rc == 0 and {p["status"] for p in doc["pcrs"]} == {"allowed"}
    assert doc["notes"] == ["quoted but not in the policy, so not judged: sha1:10, sha256:10"]
    seven = next(line for line in pinned.read_text().splitlines() if line.startswith('"sha256:7"'))
    bad = tmp_path / "bad.toml"
    bad.write_text(pinned.read_text().replace(seven, '"sha256:7" = ["' + "00" * 32 + '"]'))
    rc, doc = verify(quoted, ak[1], node, "--policy", str(bad))
    assert rc == 1 and any(
        p.startswith("sha256:7: a value the policy does not allow") for p in doc["problems"]
    )


def test_a_policy_naming_an_unquoted_pcr_fails(
    quoted: Path, ak: tuple[Path, Path], node: Path, tmp_path: Path
) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text('[pcrs]\n0 = "replay-must-match"\n14 = "replay-must-match"\n')
    rc, doc = verify(
        quoted, ak[1], node, "--policy", str(policy), "--eventlog", str(node / "eventlog")
    )
    assert rc == 1 and "sha256:14: the quote does not cover this PCR" in doc["problems"]


def test_a_measurement_the_log_does_not_show_fails(
    node: Path, ak: tuple[Path, Path], swtpm: str, tmp_path: Path
) -> None:
    tpm.extend(LiveHost(), [(12, {"sha256": b"\x66" * 32})], swtpm)  # a loader no log records
    out = tmp_path / "q.json"
    rc, _ = run(
        "quote",
        "--ak-context",
        str(ak[0]),
        "--pcrs",
        "sha256:4,12",
        "--nonce",
        NONCE,
        "-o",
        str(out),
    )
    assert rc == 0
    rc, doc = verify(out, ak[1], node)
    assert rc == 1 and [p["status"] for p in doc["pcrs"]] == ["match", "mismatch"]
