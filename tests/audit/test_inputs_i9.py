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


def test_a_full_disk_leaves_no_torn_record_and_the_next_export_is_whole(
    audit_env: AuditSettings,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import errno
    import os

    from dolmen.audit.export import transport

    record_events([EventRequest("tune.apply", f"profile:{i}") for i in range(3)])
    out = tmp_path / "siem.json"
    assert _run(capsys, "export", "--format", "json", "--to", f"file:{out}")[0] == 0
    before = out.read_bytes()
    record_events([EventRequest("quota.set", f"group:{i}") for i in range(3)])
    real_write = os.write

    def full(fd: int, data: bytes | memoryview) -> int:
        if len(data) > 10:
            real_write(fd, bytes(data[:10]))  # part of a record, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(transport.os, "write", full)
    rc, _, err = _run(capsys, "export", "--format", "json", "--to", f"file:{out}")
    assert rc == 3 and "No space left" in err
    assert out.read_bytes() == before  # the torn part is gone
    monkeypatch.setattr(transport.os, "write", real_write)
    assert _run(capsys, "export", "--format", "json", "--to", f"file:{out}")[0] == 0
    lines = out.read_bytes().splitlines()
    assert all(line.startswith(b"{") and line.endswith(b"}") for line in lines)
    assert len(lines) >= 6


def test_a_torn_tail_from_a_killed_export_is_cut_before_appending(
    audit_env: AuditSettings, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    record_events([EventRequest("tune.apply", "profile:hpc")])
    out = tmp_path / "siem.json"
    out.write_bytes(b'{"whole": 1}\n{"torn": ')
    assert _run(capsys, "export", "--format", "json", "--to", f"file:{out}")[0] == 0
    lines = out.read_bytes().splitlines()
    assert lines[0] == b'{"whole": 1}' and len(lines) >= 2
    assert not any(b'"torn"' in line for line in lines)  # no record glued to the torn one


@pytest.mark.parametrize("since", ["99999999999999999999d", "1e400h", "-5h"])
def test_audit_show_since_overflow_is_a_usage_error(
    audit_env: AuditSettings, capsys: pytest.CaptureFixture[str], since: str
) -> None:
    record_events([EventRequest("tune.apply", "profile:hpc")])
    rc, _, err = _run(capsys, "show", "--since", since)
    assert rc == 2 and "internal error" not in err, err
