"""The canonical encoding, its hash, parsing hostile lines, and who the actor is."""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import pytest

from dolmen.audit.actor import current_actor, parse_loginuid, resolve_actor, user_name
from dolmen.audit.event import (
    GENESIS,
    HASH_MARK,
    Actor,
    AuditEvent,
    LineError,
    parse_line,
    seal,
)
from dolmen.audit.settings import audit_settings
from dolmen.config import parse_config
from dolmen.errors import ConfigError
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree

BASE = AuditEvent(
    action="tune.apply",
    target="sysctl:vm.swappiness",
    outcome="success",
    actor=Actor("alice", "1000", "root", "0"),
    host="gpu-node-01",
    timestamp="2026-03-01T12:00:00.000001Z",
    details={"z": 1, "a": [1.5, None, True], "nested": {"b": 'é\n"', "a": 2}},
    pid=4242,
)


def test_line_is_canonical_ascii_and_hash_covers_the_prefix() -> None:
    sealed, line = seal(BASE, GENESIS, 1)
    assert line.endswith(b'"}}\n') and line.isascii() and b" " not in line.replace(b"\\n", b"")
    pre = line[: line.index(HASH_MARK)]
    assert sealed.hash == hashlib.sha256(pre).hexdigest()
    doc = json.loads(line)
    assert list(doc) == ["dolmen", "@timestamp", "ecs", "host", "process", "user", "event"]
    assert list(doc["dolmen"]["details"]) == ["a", "nested", "z"]  # sorted
    assert list(doc["event"])[-2:] == ["sequence", "hash"]
    assert parse_line(line) == sealed
    assert sealed.to_ecs() == doc


def test_values_json_cannot_hold_are_stored_as_text_and_nan_is_refused() -> None:
    event = AuditEvent(**{**BASE.__dict__, "details": {"path": Path("/etc/x"), 3: "int key"}})
    _, line = seal(event, GENESIS, 1)
    assert parse_line(line).details == {"path": "/etc/x", "3": "int key"}
    with pytest.raises(ValueError, match="cannot be encoded"):
        seal(AuditEvent(**{**BASE.__dict__, "details": {"x": math.nan}}), GENESIS, 1)


def test_absent_fields_are_left_out() -> None:
    bare = AuditEvent(
        action="jobs.submit",
        target="job:1",
        outcome="unknown",
        actor=Actor(None),
        host="h",
        timestamp="2026-03-01T12:00:00.000000Z",
    )
    _, line = seal(bare, GENESIS, 9)
    doc = json.loads(line)
    assert "user" not in doc and "process" not in doc and "details" not in doc["dolmen"]
    assert parse_line(line).sequence == 9


def _line() -> bytes:
    return seal(BASE, GENESIS, 3)[1]


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (b"", "malformed"),
        (b"\n", "malformed"),
        (b"\x00\xff\xfe binary junk", "malformed"),
        (b"[1, 2, 3]\n", "malformed"),
        (b'{"dolmen": {}}\n', "malformed"),
        (_line()[:200], "malformed"),  # truncated
        (_line().replace(b'"outcome":"success"', b'"outcome": "success"'), "noncanonical"),
        (_line().replace(b'"host":{"name":', b'"host":{"x":1,"name":'), "noncanonical"),
        (_line().replace(b'"sequence":3', b'"sequence":"3"'), "malformed"),
        (_line().replace(b'"sequence":3', b'"sequence":0'), "malformed"),
        (_line().replace(b'"sequence":3', b'"sequence":true'), "malformed"),
        (_line().replace(b"0" * 64, b"0" * 63 + b"g"), "malformed"),
        (_line().replace(b"gpu-node-01", b"gpu-node-02"), "hash"),
        (_line().replace(b'"sequence":3', b'"sequence":4'), "hash"),
    ],
)
def test_hostile_lines_are_named(raw: bytes, kind: str) -> None:
    with pytest.raises(LineError) as info:
        parse_line(raw)
    assert info.value.kind == kind


@pytest.mark.parametrize(
    ("text", "uid"),
    [("1000\n", 1000), ("0", 0), ("4294967295", None), ("", None), (None, None), ("-1", None)],
)
def test_parse_loginuid(text: str | None, uid: int | None) -> None:
    assert parse_loginuid(text) == uid


def test_resolve_actor() -> None:
    root = user_name(0)
    sudo = {"SUDO_USER": "alice", "SUDO_UID": "1000"}
    assert resolve_actor(sudo, 1000, 0) == Actor("alice", "1000", root, "0")
    # SUDO_* in a non-root process proves nothing: fall back to the login uid
    assert resolve_actor(sudo, 0, 1000).name == root
    assert resolve_actor({}, 0, 0) == Actor(root, "0", root, "0")
    assert resolve_actor({}, None, 0) == Actor(root, "0", root, "0")
    assert resolve_actor({}, 54321, 0) == Actor("54321", "54321", root, "0")  # no account
    assert resolve_actor(sudo, 0, 0, "dolmen-serve") == Actor("dolmen-serve", None, root, "0")


def test_current_actor_reads_loginuid_through_the_host(tmp_path: Path) -> None:
    host = TreeHost(make_tree(tmp_path, files={"proc/self/loginuid": "0\n"}))
    actor = current_actor(host)
    assert actor.effective_id == str(os.geteuid())
    if "SUDO_USER" not in os.environ:
        assert actor.id == "0"


def test_settings_from_config_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOLMEN_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DOLMEN_CONFIG_DIR", str(tmp_path / "etc"))
    monkeypatch.delenv("DOLMEN_AUDIT_FAIL_OPEN", raising=False)
    default = audit_settings(parse_config(""))
    assert default.path == tmp_path / "state" / "audit" / "audit.log"
    assert default.trusted_keys == tmp_path / "etc" / "audit-trusted-keys"
    assert not default.fail_open and default.checkpoint_every == 1000
    cfg = parse_config('[audit]\nfail_open = true\npath = "/x/a.log"\ncheckpoint_every = 5\n')
    assert audit_settings(cfg).fail_open and audit_settings(cfg).path == Path("/x/a.log")
    monkeypatch.setenv("DOLMEN_AUDIT_FAIL_OPEN", "0")
    assert not audit_settings(cfg).fail_open  # the environment wins, both ways
    monkeypatch.setenv("DOLMEN_AUDIT_FAIL_OPEN", "yes")
    assert audit_settings(parse_config("")).fail_open
    with pytest.raises(ConfigError, match="rotate_bytes must be at least 0"):  # at load now
        audit_settings(parse_config("[audit]\nrotate_bytes = -1\n"))
    with pytest.raises(ConfigError, match="valid keys"):
        parse_config("[audit]\nfail_closed = true\n")
