"""Where exported events go: ``tcp://host:port``, ``tls://host:port`` or ``file:PATH``.

Syslog over TCP has no acknowledgements, and over TLS a receiver that rejects the
client's certificate drops what was sent while send() succeeded (TLS 1.3 checks
the client after the client thinks the handshake is over). So a batch counts as
delivered only when, after sending it, dolmen half-closes the connection and the
receiver closes its side cleanly: it read everything up to our end. Any error on
the way (an alert, a reset, a timeout) leaves the batch in the spool, to be sent
again. A file is delivered when it is fsync'd.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import struct
import time
from dataclasses import dataclass
from pathlib import Path

from dolmen.errors import ServiceUnavailable, UsageError
from dolmen.values.url import split_url

SCHEMES = ("tcp", "tls", "file")


@dataclass(frozen=True)
class Destination:
    """A parsed ``--to``."""

    scheme: str
    host: str = ""
    port: int = 0
    path: Path | None = None

    @property
    def syslog(self) -> bool:
        """Whether the receiver speaks syslog (framed messages) rather than a file."""
        return self.scheme in ("tcp", "tls")

    def __str__(self) -> str:
        if self.scheme == "file":
            return f"file:{self.path}"
        return f"{self.scheme}://{self.host}:{self.port}"


@dataclass(frozen=True)
class TlsFiles:
    """Certificates for ``tls://``: the CA that signed the receiver, our certificate and key."""

    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    server_name: str | None = None


def parse_destination(text: str) -> Destination:
    """Parse ``--to``; a UsageError names the accepted forms."""
    hint = "use tcp://HOST:PORT, tls://HOST:PORT or file:PATH"
    if text.startswith("file:"):
        path = text[len("file:") :]
        if path.startswith("//"):
            path = path[2:]
        if not path:
            raise UsageError(f"--to {text!r}: no path", hint=hint)
        return Destination("file", path=Path(path))
    parts = split_url(text)
    if parts is None:
        raise UsageError(f"--to {text!r}: not a URL", hint=hint)
    if parts.scheme not in ("tcp", "tls"):
        raise UsageError(f"--to {text!r}: unknown scheme {parts.scheme!r}", hint=hint)
    port = parts.port
    if not parts.hostname or not port:
        raise UsageError(f"--to {text!r}: a host and a port are needed", hint=hint)
    return Destination(parts.scheme, parts.hostname, port)


def frame(messages: list[bytes], dest: Destination, fmt: str) -> bytes:
    """Join messages the way the receiver reads them: octet counting for syslog over a
    stream (RFC 6587 3.4.1, RFC 5425), one per line for files and JSON streams."""
    if dest.syslog and fmt != "json":
        return b"".join(b"%d %s" % (len(m), m) for m in messages)
    return b"".join(m + b"\n" for m in messages)


def deliver(dest: Destination, payload: bytes, tls: TlsFiles | None, timeout: float) -> None:
    """Send ``payload`` and return only once it is delivered (see module docstring)."""
    if dest.scheme == "file":
        assert dest.path is not None
        _append_whole(dest.path, payload)
        return
    try:
        raw = socket.create_connection((dest.host, dest.port), timeout=timeout)
    except OSError as e:
        raise ServiceUnavailable(
            f"cannot connect to {dest}: {e}", hint="is the receiver running and reachable?"
        ) from e
    try:
        if dest.scheme == "tls":
            _send_tls(raw, dest, payload, tls or TlsFiles())
        else:
            raw.sendall(payload)
            raw.shutdown(socket.SHUT_WR)
            _drain(raw)
    except (OSError, ssl.SSLError) as e:
        raise ServiceUnavailable(
            f"{dest} did not take the events: {e}",
            hint="they stay in the spool and are sent again by the next export",
        ) from e
    finally:
        with contextlib.suppress(OSError):
            raw.close()


def _append_whole(path: Path, payload: bytes) -> None:
    """Append ``payload`` (whole lines) to ``path`` or leave the file as it was: a write cut
    short (ENOSPC, EIO) is truncated away before the error is raised, and a torn last line
    an earlier export left (killed mid-write) is cut before this one appends, so no record
    is ever glued to half of another."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o640)
    except OSError as e:
        raise ServiceUnavailable(f"cannot write {path}: {e.strerror}") from e
    try:
        start = _whole_lines_end(fd, os.fstat(fd).st_size)
        if start != os.fstat(fd).st_size:
            os.ftruncate(fd, start)
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
                os.fsync(fd)
            raise ServiceUnavailable(
                f"cannot write {path}: {e.strerror}",
                hint="nothing was appended; the events stay in the spool for the next export",
            ) from e
    except OSError as e:
        raise ServiceUnavailable(f"cannot write {path}: {e.strerror}") from e
    finally:
        os.close(fd)


def _whole_lines_end(fd: int, size: int, chunk: int = 1 << 16) -> int:
    """The offset just after the last newline of the file (0 when it holds none)."""
    end = size
    while end > 0:
        begin = max(0, end - chunk)
        data = os.pread(fd, end - begin, begin)
        if end == size and data.endswith(b"\n"):
            return size
        nl = data.rfind(b"\n")
        if nl >= 0:
            return begin + nl + 1
        end = begin
    return 0


def _send_tls(raw: socket.socket, dest: Destination, payload: bytes, tls: TlsFiles) -> None:
    ctx = ssl.create_default_context(cafile=str(tls.ca) if tls.ca else None)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if tls.cert:
        ctx.load_cert_chain(str(tls.cert), str(tls.key) if tls.key else None)
    s = ctx.wrap_socket(raw, server_hostname=tls.server_name or dest.host)
    try:
        s.sendall(payload)
        try:
            plain = s.unwrap()  # our close_notify; waits for the receiver's, or its alert
        except (ssl.SSLEOFError, ssl.SSLZeroReturnError):
            _no_reset(s)  # the receiver closed without close_notify (rsyslog does)
            return
        plain.shutdown(socket.SHUT_WR)
        _drain(plain)
    finally:
        s.close()


def _drain(sock: socket.socket) -> None:
    """Read until the receiver closes (syslog receivers send nothing back), then make sure
    it closed after reading everything."""
    while sock.recv(4096):
        pass
    _no_reset(sock)


def _no_reset(sock: socket.socket) -> None:
    """Raise if the receiver reset the connection: a receiver that closes a connection
    with unread data (rsyslog refusing a client certificate after the TLS 1.3 handshake)
    answers that data with a reset, which arrives within a round trip of its close. A
    receiver that read everything closes cleanly. So wait a few round trips, then look."""
    time.sleep(_grace(sock))
    err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if err:
        raise ConnectionResetError(err, f"the receiver reset the connection: {os.strerror(err)}")
    try:
        sock.setblocking(False)
        if sock.recv(1):
            raise ConnectionError("the receiver sent data after closing")
    except (BlockingIOError, ssl.SSLWantReadError):
        pass
    except ssl.SSLError:
        pass  # EOF again on a TLS socket: nothing new
    finally:
        sock.setblocking(True)


def _grace(sock: socket.socket) -> float:
    """Four smoothed round-trip times (from TCP_INFO), at least 20 ms, at most 2 s."""
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
        rtt_us = int(struct.unpack_from("I", info, _TCPI_RTT_OFFSET)[0])
    except (OSError, struct.error):
        rtt_us = 0
    return min(max(4 * rtt_us / 1e6, 0.02), 2.0)


# struct tcp_info (linux/tcp.h): 8 bytes of u8 fields, 15 u32 fields (rto ... rcv_ssthresh),
# then tcpi_rtt in microseconds
_TCPI_RTT_OFFSET = 8 + 15 * 4
