"""``dolmen keys status`` and ``dolmen keys rotate`` in-process, against every provider."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.audit.event import parse_line
from dolmen.cli.main import main
from dolmen.keys.settings import KeySettings
from tests.keys.services import OpenBao, SoftHsmToken, free_port
from tests.keys.test_audit_signing import keys_toml
from tests.report.contract import assert_valid


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DOLMEN_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DOLMEN_CONFIG_DIR", str(tmp_path / "etc"))
    monkeypatch.delenv("DOLMEN_AUDIT_FAIL_OPEN", raising=False)
    (tmp_path / "etc").mkdir()
    return tmp_path / "etc" / "dolmen.toml"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["keys", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def _status(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object]]:
    rc, out, _ = _run(capsys, "status", "--json")
    doc = json.loads(out)
    assert doc["schema"] == "dolmen.keys.status/1"
    assert_valid(doc)
    return rc, doc


def test_file_provider_status_rotate_and_audit(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kek = tmp_path / "keys" / "kek"
    site.write_text(keys_toml(KeySettings(kek_file=kek)))
    rc, doc = _status(capsys)
    assert rc == 0 and doc["answers"] is True and doc["keys"] == [] and "no KEK yet" in str(doc)
    rc, out, _ = _run(capsys, "rotate")
    assert rc == 0 and "plan: put KEK version 1" in out and "dry run" in out
    assert not kek.exists()
    rc, out, _ = _run(capsys, "rotate", "--yes")
    assert rc == 0 and "KEK version 1 in service" in out
    rc, out, _ = _run(capsys, "rotate", "--yes", "--retire-below", "2")
    assert rc == 0 and "KEK version 2 in service" in out and "below 2 retired" in out
    rc, doc = _status(capsys)
    assert doc["keys"] == [
        {
            "key_ref": str(kek),
            "purpose": "wrap",
            "latest": 2,
            "min_decryption": 2,
            "versions": [1, 2],
        }
    ]
    rc, out, _ = _run(capsys, "status")
    assert rc == 0 and "versions 1,2  newest 2  min decryption 2" in out
    log = tmp_path / "state" / "audit" / "audit.log"
    events = [parse_line(x) for x in log.read_bytes().splitlines(keepends=True)]
    assert [(e.action, e.outcome) for e in events] == [
        ("keys.rotate", "unknown"),
        ("keys.rotate", "success"),
        ("keys.rotate", "unknown"),
        ("keys.rotate", "success"),
        ("keys.retire", "unknown"),
        ("keys.retire", "success"),
    ]
    assert events[3].details["version"] == 2
    rc, _, err = _run(capsys, "rotate", "--retire-below", "9")
    assert rc == 2 and "--retire-below 9" in err


def test_loose_kek_file_does_not_answer(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kek = tmp_path / "kek"
    site.write_text(keys_toml(KeySettings(kek_file=kek)))
    assert _run(capsys, "rotate", "--yes")[0] == 0
    kek.chmod(0o644)
    rc, doc = _status(capsys)
    assert rc == 3 and doc["answers"] is False and "mode 0644" in str(doc["detail"])
    rc, _, err = _run(capsys, "rotate", "--yes")
    assert rc == 3 and "mode 0644" in err


def test_vault_status_and_dead_server(
    site: Path, openbao: OpenBao, capsys: pytest.CaptureFixture[str]
) -> None:
    s = openbao.settings()
    site.write_text(keys_toml(s))
    assert _run(capsys, "rotate", "--yes")[0] == 0  # makes the derived key, version 1
    assert _run(capsys, "rotate", "--yes")[0] == 0
    rc, doc = _status(capsys)
    assert rc == 0 and doc["where"] == openbao.address and isinstance(doc["latency_ms"], float)
    wrap = doc["keys"][0]  # type: ignore[index]
    assert wrap["latest"] == 2 and wrap["versions"] == [1, 2]
    dead = f"http://127.0.0.1:{free_port()}"
    site.write_text(keys_toml(openbao.settings(vault_address=dead, vault_mount="t", timeout=2.0)))
    rc, out, _ = _run(capsys, "status")
    assert rc == 3 and "does NOT answer" in out and dead in out


def test_vault_token_file_missing(
    site: Path, openbao: OpenBao, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site.write_text(keys_toml(openbao.settings(vault_token_file=tmp_path / "none")))
    rc, doc = _status(capsys)
    assert rc == 3 and "no Vault token at" in str(doc["detail"])
    assert doc["where"] == openbao.address


def test_pkcs11_status(
    site: Path, softhsm_token: SoftHsmToken, capsys: pytest.CaptureFixture[str]
) -> None:
    site.write_text(keys_toml(softhsm_token.settings()))
    rc, out, _ = _run(capsys, "rotate", "--yes")
    assert rc == 0 and "KEK version 1 in service" in out
    rc, doc = _status(capsys)
    assert rc == 0 and doc["provider"] == "pkcs11" and doc["keys"][0]["versions"] == [1]  # type: ignore[index]


def test_file_status_names_the_audit_signing_key(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "elsewhere" / "audit.key"
    site.write_text(f'[audit]\nkey = "{key}"\n')
    assert main(["audit", "key"]) == 0  # made on first use, at [audit] key
    trust_line = capsys.readouterr().out
    rc, doc = _status(capsys)
    (sign,) = doc["keys"]  # type: ignore[misc]
    assert rc == 0 and sign["purpose"] == "sign" and sign["key_ref"] in trust_line
