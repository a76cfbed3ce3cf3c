"""``dolmen serve``'s settings: each flag, else its ``[serve]`` key of dolmen.toml, else
the default; checked once, before anything listens.

    [serve]
    listen = "127.0.0.1:9405"
    interval = "5m"           # the quick tier's period
    run_timeout = "60s"       # bounds each run (validate --timeout)
    max_age = "20m"           # older verdicts are refused (default: 3 intervals + run_timeout)
    state = "/var/lib/dolmen" # the history, tokens and socket live in <state>/serve
    open_reads = true         # default: true on loopback, false elsewhere
    tls_cert = "/etc/dolmen/tls/node.pem"
    tls_key = "/etc/dolmen/tls/node.key"
    tls_client_ca = "/etc/dolmen/tls/ca.pem"   # mutual TLS
    fleet = "/var/lib/dolmen/fleet"            # mount the fleet dashboard at /fleet
    host_root = "/host"       # read the node's files there (the agent in a container)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dolmen.config import Config
from dolmen.paths import state_dir
from dolmen.serve.server import DEFAULT_LISTEN, Listen, check_tls, parse_listen


@dataclass(frozen=True)
class Settings:
    """Everything the server needs to start."""

    listen: Listen
    interval: float
    run_timeout: float
    max_age: float | None
    state: Path
    open_reads: bool
    source: str | None
    fleet: Path | None
    host_root: Path | None = None  # the node's / mounted here (--host-root, DOLMEN_HOST_ROOT)

    @property
    def folder(self) -> Path:
        """``<state>/serve``: the history, the tokens and the agent socket."""
        return self.state / "serve"


def _seconds(text: str, what: str) -> float:
    from dolmen.values.duration import parse_duration

    return parse_duration(text, what=what, bare="s", positive=True).total_seconds()


def resolve(flags: dict[str, Any], config: Config) -> Settings:
    """The settings from the flags (None: not given) and ``[serve]``."""

    def pick(key: str, default: Any = None) -> Any:
        value = flags.get(key)
        return value if value is not None else config.get("serve", key, default)

    host, port = parse_listen(str(pick("listen", DEFAULT_LISTEN)))

    def path(key: str) -> Path | None:
        value = pick(key)
        return Path(value).expanduser() if value else None

    listen = Listen(host, port, path("tls_cert"), path("tls_key"), path("tls_client_ca"))
    check_tls(listen)
    max_age = pick("max_age")
    open_reads = pick("open_reads")
    return Settings(
        listen=listen,
        interval=_seconds(str(pick("interval", "5m")), "--interval"),
        run_timeout=_seconds(str(pick("run_timeout", "60s")), "--run-timeout"),
        max_age=None if max_age is None else _seconds(str(max_age), "--max-age"),
        state=_folder(path("state"), "--state") or state_dir(),
        open_reads=listen.loopback if open_reads is None else bool(open_reads),
        source=flags.get("source"),
        fleet=_folder(path("fleet"), "--fleet"),
        host_root=_host_root(path("host_root"), flags.get("source")),
    )


def _folder(path: Path | None, flag: str) -> Path | None:
    """``path`` unless something other than a folder is there (a FIFO, a file): then one line
    naming ``flag``, before anything listens. A folder not made yet is dolmen's to make."""
    if path is not None and (path.exists() or path.is_symlink()) and not path.is_dir():
        from dolmen.errors import UsageError
        from dolmen.fsutil import not_a_file

        raise UsageError(f"{flag} {path}: {not_a_file(path, 'folder')}", hint="name a folder")
    return path


def _host_root(root: Path | None, source: str | None) -> Path | None:
    """``--host-root``, checked against ``--from`` (a recorded host has its own root)."""
    if root is None or str(root) == "/":
        return None
    if source is not None:
        from dolmen.errors import UsageError

        raise UsageError(
            f"--host-root {root} and --from {source} name two hosts",
            hint="--from reads a recorded host; --host-root this node mounted into a container",
        )
    return root
