"""Issue 9 case 14 (audit): a missing signing key is not regenerated behind the trust file's
back; TLS input mistakes, a negative --timeout and a zero --batch are usage errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.audit import EventRequest, record_events
from dolmen.audit.settings import AuditSettings
from dolmen.cli.main import main


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["audit", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_a_missing_key_the_trust_file_knows_is_not_regenerated(
    audit_env: AuditSettings, capsys: pytest.CaptureFixture[str]
) -> None:
    record_events([EventRequest("tune.apply", "profile:hpc")])
    assert _run(capsys, "checkpoint")[0] == 0
    trust = audit_env.trusted_keys.read_text()
    audit_env.key.unlink()
    rc, _, err = _run(capsys, "checkpoint")
    assert rc == 3, err
    lines = err.strip().splitlines()
    assert lines[0].startswith(f"dolmen: error: the audit signing key {audit_env.key} is missing")
    assert lines[1].startswith("hint: restore") and len(lines) == 2
    assert not audit_env.key.exists() and audit_env.trusted_keys.read_text() == trust
    rc, out, _ = _run(capsys, "verify")
    assert rc == 0 and "TAMPERED" not in out


def test_first_key_is_still_created_when_nothing_is_trusted(
    audit_env: AuditSettings, capsys: pytest.CaptureFixture[str]
) -> None:
    record_events([EventRequest("tune.apply", "profile:hpc")])
    assert _run(capsys, "checkpoint")[0] == 0 and audit_env.key.exists()


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--cert", "{f}"], "--cert and --key go together"),
        (["--key", "{f}"], "--cert and --key go together"),
        (["--ca", "{absent}"], "does not exist"),
        (["--ca", "{dir}"], "is a directory"),
        (["--timeout", "-1"], "--timeout"),
        (["--timeout", "0"], "--timeout"),
        (["--batch", "0"], "--batch"),
    ],
)
def test_tls_and_number_mistakes_are_usage_errors(
    audit_env: AuditSettings,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    extra: list[str],
    words: str,
) -> None:
    f = tmp_path / "client.pem"
    f.write_text("x")
    args = [a.format(f=f, absent=tmp_path / "absent.pem", dir=tmp_path) for a in extra]
    rc, _, err = _run(capsys, "export", "--format", "cef", "--to", "tls://127.0.0.1:9", *args)
    assert rc == 2 and words in err, err
    assert "deliver" not in err and "cannot connect" not in err


def test_tls_flags_without_tls_are_refused(
    audit_env: AuditSettings, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "ca.pem"
    f.write_text("x")
    out = tmp_path / "siem.cef"
    rc, _, err = _run(capsys, "export", "--format", "cef", "--to", f"file:{out}", "--ca", str(f))
    assert rc == 2 and "--ca apply to tls:// only" in err
