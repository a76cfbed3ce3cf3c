"""Export to a real rsyslogd on loopback (plain TCP, then mutual TLS), read back what it
wrote, and compare event by event."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dolmen.audit import EventRequest, checkpoint, record_events
from dolmen.audit.event import AuditEvent, parse_line
from dolmen.audit.export import ExportResult, TlsFiles, export
from dolmen.audit.export.formats import cef, structured_data
from dolmen.audit.reader import read_entries
from dolmen.audit.settings import AuditSettings
from dolmen.errors import ServiceUnavailable
from tests.audit.certs import CertificateAuthority
from tests.audit.rsyslog import Rsyslog, start_rsyslog

pytestmark = pytest.mark.service


@pytest.fixture
def log(audit_env: AuditSettings) -> AuditSettings:
    record_events(
        [
            EventRequest("tune.apply", "sysctl:vm.swappiness", details={"from": 60, "to": 10}),
            EventRequest("jobs.submit", "job:7", outcome="failure", details={"why": "quota"}),
            EventRequest(
                "quota.set",
                'group "ml" ]=|\\',  # every character RFC 5424 SD and CEF must escape
                details={"gpus": 8, "note": "naïve = ok"},
                actor="dolmen-serve",
            ),
        ],
        settings=audit_env,
    )
    checkpoint(audit_env)
    record_events([EventRequest("jobs.gpu_allocate", f"gpu:{i}") for i in range(4)])
    return audit_env


def _events(settings: AuditSettings, result: ExportResult) -> list[tuple[AuditEvent, bytes]]:
    assert result.first is not None and result.last is not None
    out = []
    for entry in read_entries(settings.path, after=result.first - 1):
        assert entry.event is not None and entry.event.sequence is not None
        if entry.event.sequence <= result.last:
            out.append((entry.event, entry.line))
    return out


def _compare(server: Rsyslog, start: int, fmt: str, sent: list[tuple[AuditEvent, bytes]]) -> None:
    raw = server.wait_lines(start + len(sent))
    fields = server.fields()
    assert len(raw) == start + len(sent), server.stderr()
    for k, (event, line) in enumerate(sent):
        got, parsed = raw[start + k], fields[start + k]
        assert parsed["hostname"] == event.host
        assert parsed["app-name"] == "dolmen" and parsed["procid"] == str(event.pid)
        assert parsed["structured-data"] == structured_data(event).decode()
        assert f'seq="{event.sequence}"' in parsed["structured-data"]  # the dedup key
        if fmt == "rfc5424":
            assert parsed["msgid"] == event.action
            assert parsed["msg"].encode() == line.rstrip(b"\n")
            assert parse_line(parsed["msg"].encode()) == event  # arrived intact, hash and all
            assert got.endswith(line.rstrip(b"\n"))
        else:
            assert parsed["msgid"] == "CEF"
            assert parsed["msg"].encode() == cef(event)
            assert f"externalId={event.sequence} " in parsed["msg"]
            assert f"dvchost={event.host} " in parsed["msg"]


@pytest.fixture
def plain(tmp_path: Path) -> Iterator[Rsyslog]:
    server = start_rsyslog(tmp_path / "rsyslog")
    try:
        yield server
    finally:
        server.stop()


def test_rfc5424_and_cef_over_tcp(log: AuditSettings, plain: Rsyslog) -> None:
    to = f"tcp://127.0.0.1:{plain.port}"
    first = export(log, "rfc5424", to, batch_size=3)
    assert first.sent == 8 and (first.first, first.last) == (1, 8)
    _compare(plain, 0, "rfc5424", _events(log, first))
    again = export(log, "rfc5424", to)
    assert again.sent == 0 and again.resent == 0  # the cursor remembers
    second = export(log, "cef", to)
    assert second.sent == 8
    _compare(plain, 8, "cef", _events(log, second))


def test_a_spooled_batch_is_sent_again_after_a_failure(
    log: AuditSettings, plain: Rsyslog, tmp_path: Path
) -> None:
    to = f"tcp://127.0.0.1:{plain.port}"
    plain.stop()
    with pytest.raises(ServiceUnavailable):
        export(log, "rfc5424", to)
    restarted = start_rsyslog(tmp_path / "rsyslog2")
    try:
        to = f"tcp://127.0.0.1:{restarted.port}"
        result = export(log, "rfc5424", to)
        assert result.sent == 8
        _compare(restarted, 0, "rfc5424", _events(log, result))
    finally:
        restarted.stop()


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, object]:
    ca = CertificateAuthority(tmp_path / "pki", "siem")
    rogue = CertificateAuthority(tmp_path / "rogue", "rogue")
    return {
        "ca": ca,
        "server": ca.issue("localhost", server=True),
        "client": ca.issue("client.dolmen.test", server=False),
        "stranger": rogue.issue("client.dolmen.test", server=False),
    }


def test_mutual_tls_delivers_and_a_refused_client_keeps_its_spool(
    log: AuditSettings, pki: dict[str, object], tmp_path: Path
) -> None:
    ca = pki["ca"]
    assert isinstance(ca, CertificateAuthority)
    server = start_rsyslog(
        tmp_path / "rsyslog-tls",
        tls=pki["server"],  # type: ignore[arg-type]
        ca=ca.pem,
        peer="client.dolmen.test",
    )
    try:
        to = f"tls://127.0.0.1:{server.port}"
        stranger = pki["stranger"]
        client = pki["client"]
        # A certificate from another CA: rsyslog drops the messages even though send()
        # succeeded; dolmen sees the refusal when it waits for the receiver to close.
        bad = TlsFiles(ca.pem, stranger.cert, stranger.key)  # type: ignore[attr-defined]
        with pytest.raises(ServiceUnavailable):
            export(log, "rfc5424", to, tls=bad)
        with pytest.raises(ServiceUnavailable):
            export(log, "rfc5424", to, tls=TlsFiles(ca.pem))  # no client certificate at all
        assert server.wait_lines(1, timeout=1.0) == []
        good = TlsFiles(ca.pem, client.cert, client.key)  # type: ignore[attr-defined]
        first = export(log, "rfc5424", to, tls=good)
        assert (first.resent, first.sent) == (8, 0)  # the staged batch went first
        _compare(server, 0, "rfc5424", _events(log, ExportResult("", "", 8, 0, 1, 8)))
        second = export(log, "cef", to, tls=good)
        assert second.sent == 8
        _compare(server, 8, "cef", _events(log, second))
    finally:
        server.stop()
