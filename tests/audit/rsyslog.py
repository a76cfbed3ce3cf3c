"""A private rsyslogd on 127.0.0.1 for the export tests: plain TCP or mutual TLS.

It writes each message twice: ``raw.log`` holds the message as received
(``%rawmsg%``), ``fields.log`` what rsyslog parsed out of it (RFC 5424 fields).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.audit.certs import Issued

FIELDS = ("hostname", "app-name", "procid", "msgid", "structured-data", "msg")


@dataclass
class Rsyslog:
    """A running private rsyslogd."""

    port: int
    folder: Path
    proc: subprocess.Popen[bytes]

    @property
    def raw(self) -> Path:
        return self.folder / "raw.log"

    def wait_lines(self, count: int, timeout: float = 15.0) -> list[bytes]:
        """The raw messages once at least ``count`` arrived (rsyslog writes asynchronously)."""
        deadline = time.monotonic() + timeout
        while True:
            lines = self.raw.read_bytes().splitlines() if self.raw.exists() else []
            if len(lines) >= count or time.monotonic() > deadline:
                return lines
            assert self.proc.poll() is None, self.stderr()
            time.sleep(0.05)

    def fields(self) -> list[dict[str, str]]:
        """What rsyslog parsed out of each message, in arrival order."""
        path = self.folder / "fields.log"
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        return [dict(zip(FIELDS, line.split("\t"), strict=True)) for line in text.splitlines()]

    def stderr(self) -> str:
        log = self.folder / "rsyslogd.err"
        return log.read_text(errors="replace") if log.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_rsyslog(
    folder: Path, *, tls: Issued | None = None, ca: Path | None = None, peer: str = ""
) -> Rsyslog:
    """Start rsyslogd in ``folder`` listening on a free loopback port (TLS when ``tls``)."""
    binary = shutil.which("rsyslogd") or "/usr/sbin/rsyslogd"
    if not Path(binary).exists():
        pytest.skip("rsyslogd is not installed (apt-get install rsyslog rsyslog-gnutls)")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "work").mkdir(exist_ok=True)
    port = _free_port()
    tab = '  constant(value="\\t")\n'
    fields = tab.join(f'  property(name="{name}")\n' for name in FIELDS)
    if tls is not None:
        assert ca is not None
        tls_globals = (
            f'global(DefaultNetstreamDriverCAFile="{ca}" '
            f'DefaultNetstreamDriverCertFile="{tls.cert}" '
            f'DefaultNetstreamDriverKeyFile="{tls.key}")\n'
        )
        module = (
            'module(load="imtcp" StreamDriver.Name="gtls" StreamDriver.Mode="1" '
            f'StreamDriver.AuthMode="x509/name" PermittedPeer=["{peer}"])\n'
        )
    else:
        tls_globals = ""
        module = 'module(load="imtcp")\n'
    conf = (
        f'global(workDirectory="{folder / "work"}" maxMessageSize="64k")\n'
        + tls_globals
        + module
        + 'template(name="raw" type="string" string="%rawmsg%\\n")\n'
        + 'template(name="fields" type="list") {\n'
        + fields
        + '  constant(value="\\n")\n}\n'
        + 'ruleset(name="siem") {\n'
        + f'  action(type="omfile" file="{folder / "raw.log"}" template="raw")\n'
        + f'  action(type="omfile" file="{folder / "fields.log"}" template="fields")\n'
        + "}\n"
        + f'input(type="imtcp" address="127.0.0.1" port="{port}" ruleset="siem")\n'
    )
    (folder / "rsyslog.conf").write_text(conf)
    err = open(folder / "rsyslogd.err", "wb")  # noqa: SIM115 - lives as long as the daemon
    proc = subprocess.Popen(
        [binary, "-n", "-f", str(folder / "rsyslog.conf"), "-i", str(folder / "rsyslogd.pid")],
        stdout=err,
        stderr=err,
    )
    server = Rsyslog(port, folder, proc)
    deadline = time.monotonic() + 15
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                server.stop()
                pytest.fail(f"rsyslogd did not start: {server.stderr()}")
            time.sleep(0.05)
