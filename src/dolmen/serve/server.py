"""Running the application under uvicorn: the listen address, TLS and mutual TLS, and the
limits a server facing a cluster network needs.

uvicorn bounds a request's header size (``h11_max_incomplete_event_size``), idle
keep-alive connections and the number of connections (``limit_concurrency``: past it,
503); it has no bound on how long a client may take to send its headers, so
``BoundedH11`` closes a connection whose request line and headers have not arrived
within ``HEADER_SECONDS`` (a slowloris client costs one socket for that long, never the
server). Bodies and handler time are bounded by serve/bounds.py.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from dolmen.errors import EnvironmentProblem, UsageError

DEFAULT_LISTEN = "127.0.0.1:9405"  # dcgm-exporter is 9400
HEADER_SECONDS = 5.0
HEADER_BYTES = 16 * 1024
CONNECTIONS_MAX = 200


class BoundedH11(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request is not in within
    ``HEADER_SECONDS`` of its connection or of the previous response."""

    header_seconds = HEADER_SECONDS
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._header_timer = self.loop.call_later(self.header_seconds, self._late, self.cycle)

    def _late(self, cycle_then: Any) -> None:
        if self.cycle is cycle_then and not self.transport.is_closing():
            self.transport.close()  # no new request began: a slow or silent client


@dataclass(frozen=True)
class Listen:
    """Where to listen, and with which certificates."""

    host: str
    port: int
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None

    @property
    def loopback(self) -> bool:
        """Whether only this machine can connect."""
        return self.host in ("127.0.0.1", "::1", "localhost")


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9405`` for IPv6); a UsageError naming the form otherwise."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(
            f"--listen {text!r}: not HOST:PORT",
            hint="e.g. --listen 127.0.0.1:9405, or 0.0.0.0:9405 for every address",
        )
    return host, int(port)


def check_tls(listen: Listen) -> None:
    """Refuse half a TLS setup before anything starts."""
    if (listen.tls_cert is None) != (listen.tls_key is None):
        raise UsageError("--tls-cert and --tls-key go together")
    if listen.tls_client_ca is not None and listen.tls_cert is None:
        raise UsageError("--tls-client-ca (mutual TLS) needs --tls-cert and --tls-key")
    for path in (listen.tls_cert, listen.tls_key, listen.tls_client_ca):
        if path is not None and not path.is_file():
            what = "not a regular file" if path.exists() else "no such file"
            raise UsageError(f"{path}: {what}", hint="give the PEM file's path")
    if listen.tls_cert is None:
        return
    # Loaded once here, as uvicorn will: junk or a key of another certificate is one line
    # naming the files, not an SSLError from inside the server's start.
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        ctx.load_cert_chain(listen.tls_cert, listen.tls_key)
    except (ssl.SSLError, OSError) as e:
        raise UsageError(
            f"--tls-cert {listen.tls_cert} with --tls-key {listen.tls_key}: not a PEM "
            f"certificate and its private key ({e.strerror or e})",
            hint="give the server's certificate and the key it was made with, both PEM",
        ) from None
    if listen.tls_client_ca is not None:
        try:
            ctx.load_verify_locations(listen.tls_client_ca)
        except (ssl.SSLError, OSError) as e:
            raise UsageError(
                f"--tls-client-ca {listen.tls_client_ca}: not PEM CA certificates "
                f"({e.strerror or e})",
                hint="give the CA that signs the clients' certificates, PEM",
            ) from None


def uvicorn_config(app: Any, listen: Listen, **more: Any) -> Any:
    """The uvicorn Config of ``app`` on ``listen`` (``more``: other uvicorn options)."""
    import uvicorn

    tls: dict[str, Any] = {}
    if listen.tls_cert is not None:
        tls = {"ssl_certfile": str(listen.tls_cert), "ssl_keyfile": str(listen.tls_key)}
        if listen.tls_client_ca is not None:
            tls |= {"ssl_ca_certs": str(listen.tls_client_ca), "ssl_cert_reqs": ssl.CERT_REQUIRED}
    return uvicorn.Config(
        app,
        host=listen.host,
        port=listen.port,
        http=more.pop("http", BoundedH11),
        lifespan="on",
        access_log=False,
        log_level="warning",
        limit_concurrency=CONNECTIONS_MAX,
        timeout_keep_alive=5,
        timeout_graceful_shutdown=5,
        h11_max_incomplete_event_size=HEADER_BYTES,
        **tls,
        **more,
    )


def run(app: Any, listen: Listen, sock: socket.socket) -> None:
    """Serve on ``sock`` (``listen_socket``) until SIGTERM or SIGINT (uvicorn's handlers: a
    graceful stop)."""
    import uvicorn

    try:
        uvicorn.Server(uvicorn_config(app, listen)).run(sockets=[sock])
    finally:
        sock.close()


def listen_socket(listen: Listen) -> socket.socket:
    """The bound socket of ``listen`` (as uvicorn binds it); a port in use, a port this user
    may not bind or an address not of this host is one line naming --listen, where uvicorn
    logged its own ERROR line."""
    family = socket.AF_INET6 if ":" in listen.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    where = f"--listen {listen.host}:{listen.port}"
    try:
        sock.bind((listen.host, listen.port))
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise EnvironmentProblem(
                f"{where}: the address is in use",
                hint="stop what listens there (another dolmen serve?) or choose another port",
            ) from None
        if e.errno == errno.EACCES:
            raise EnvironmentProblem(
                f"{where}: permission denied (ports below 1024 need root)",
                hint="choose a port from 1024 up, or run as root",
            ) from None
        raise UsageError(
            f"{where}: not an address of this host ({e.strerror or e})",
            hint="--listen 127.0.0.1:9405, or 0.0.0.0:9405 for every address",
        ) from None
    return sock
