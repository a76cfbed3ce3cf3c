"""The attest commands' bad input: no TPM, a dead TCTI, wrong flags, files that are not
what they claim; each one line with its exit code. And the terminal output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.integrity.attest.cli_run import NONCE, run
from tests.integrity.attest.conftest import _free_ports


def test_no_tpm_and_a_dead_tcti_are_named(
    ak: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TPM2TOOLS_TCTI")
    if Path("/dev/tpm0").exists() or Path("/dev/tpmrm0").exists():
        pytest.skip("this machine has a TPM device")
    rc, text = run("quote", "--ak-context", str(ak[0]), "--pcrs", "sha256:0")
    assert rc == 3 and text == "no TPM: /dev/tpmrm0 and /dev/tpm0 are absent and no TCTI is set"
    dead = f"swtpm:host=127.0.0.1,port={_free_ports(1)[0]}"
    rc, text = run("quote", "--ak-context", str(ak[0]), "--pcrs", "sha256:0", "--tcti", dead)
    assert rc == 3 and text.startswith(f"tpm2_quote failed on the TPM at {dead}: ")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["verify", "/nonexistent", "--ak-pub", "/x", "--nonce", NONCE], "cannot read the quote"),
        (["quote", "--ak-context", "x"], "give one of --pcrs or --policy"),
        (["quote", "--ak-context", "x", "--pcrs", "sha256:0-30"], "--pcrs 'sha256:0-30'"),
        (["quote", "--ak-context", "x", "--pcrs", "md5:1"], "--pcrs 'md5:1'"),
        (
            ["quote", "--ak-context", "x", "--pcrs", "sha256:1", "--nonce", "zz"],
            "--nonce must be 8 to 64 bytes",
        ),
    ],
)
def test_bad_input_is_one_line(argv: list[str], message: str) -> None:
    rc, text = run(*argv)
    assert rc == 2 and message in text


def test_a_file_that_is_not_a_quote_is_refused(tmp_path: Path, ak: tuple[Path, Path]) -> None:
    junk = tmp_path / "q.json"
    for body, message in (
        ("{", "not JSON"),
        ('{"schema": "x"}', "not a quote document"),
        ('{"schema": "dolmen.integrity.attest.quote/1", "nonce": "zz"}', "'pcrs' is not a table"),
    ):
        junk.write_text(body)
        rc, text = run("verify", str(junk), "--ak-pub", str(ak[1]), "--nonce", NONCE)
        assert rc == 2 and message in text, text


def test_a_junk_ak_key_is_bad_input_and_a_junk_quote_is_not_trusted(
    quoted: Path, ak: tuple[Path, Path], tmp_path: Path
) -> None:
    junk = tmp_path / "ak.pem"
    junk.write_text("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
    rc, text = run("verify", str(quoted), "--ak-pub", str(junk), "--nonce", NONCE)
    assert rc == 2 and "the AK public key is not a PEM public key" in text
    doc = json.loads(quoted.read_text())
    doc["attest"] = "00" * 40
    bad = tmp_path / "q.json"
    bad.write_text(json.dumps(doc))
    rc, text = run("verify", str(bad), "--ak-pub", str(ak[1]), "--nonce", NONCE, "--json")
    assert rc == 1 and json.loads(text)["problems"] == [
        "not a checkable quote: not made by a TPM (its magic is not TPM_GENERATED_VALUE)"
    ]


def test_eventlog_shows_what_was_measured(node: Path) -> None:
    rc, text = run("eventlog", str(node / "eventlog"))
    assert rc == 0 and "EV_EFI_BOOT_SERVICES_APPLICATION   \\EFI\\ubuntu\\shimx64.efi" in text
    rc, text = run("eventlog")  # this machine: no securityfs mounted
    if not Path("/sys/kernel/security/tpm0/binary_bios_measurements").exists():
        assert rc == 2 and "no event log to read" in text


def test_swtpm_tools_are_found() -> None:
    assert shutil.which("tpm2_checkquote") is not None


def test_the_terminal_verdict_names_each_pcr_and_the_problems(
    quoted: Path, ak: tuple[Path, Path], node: Path
) -> None:
    rc, text = run(
        "verify",
        str(quoted),
        "--ak-pub",
        str(ak[1]),
        "--nonce",
        NONCE,
        "--eventlog",
        str(node / "eventlog"),
        "--ima",
        str(node / "ima"),
    )
    assert (
        rc == 0
        and text.splitlines()[0] == "sha256:0   match"
        and text.splitlines()[-1] == "trusted"
    )
    rc, text = run("verify", str(quoted), "--ak-pub", str(ak[1]), "--nonce", "b2" * 32)
    lines = text.splitlines()
    assert rc == 1 and lines[-1] == "NOT trusted"
    assert "sha256:0   unverifiable  no event log to replay was given" in lines
    assert any(line.startswith("problem: the quote answers nonce a1a1") for line in lines)


def test_a_fifo_for_a_file_and_a_folder_for_an_output_are_refused(
    tmp_path: Path, ak: tuple[Path, Path]
) -> None:
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    rc, text = run("verify", str(fifo), "--ak-pub", str(ak[1]), "--nonce", NONCE)
    assert rc == 2 and text.startswith(f"{fifo}: cannot read the quote: ")
    rc, text = run("quote", "--ak-context", str(ak[0]), "--pcrs", "sha256:0", "-o", str(tmp_path))
    assert rc == 2 and "is a directory" in text
    rc, text = run("policy", "--eventlog", str(fifo), "-o", str(tmp_path / "p.toml"))
    assert rc == 2 and "cannot read the event log" in text and not (tmp_path / "p.toml").exists()
