"""The live host: root ``/``, real commands with timeouts, never through a shell."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from dolmen.host.base import DEFAULT_TIMEOUT, Host
from dolmen.host.command import CommandResult, RunStatus

# Parsers read English output with '.' decimals; LC_ALL=C pins both.
_FIXED_ENV = {"LC_ALL": "C", "LANG": "C"}


class LiveHost(Host):
    """The machine dolmen runs on."""

    kind = "live"

    def __init__(self, root: Path = Path("/")) -> None:
        super().__init__(root)

    def path(self, rel: str) -> Path:
        return self.root / rel.lstrip("/")

    def run(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, key: str | None = None
    ) -> CommandResult:
        args = tuple(argv)
        env = {**os.environ, **_FIXED_ENV}
        try:
            proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,  # so a timeout kills the whole process group
            )
        except FileNotFoundError:
            return CommandResult(args, RunStatus.MISSING, reason=f"{args[0]} not found on PATH")
        except PermissionError as e:
            return CommandResult(args, RunStatus.DENIED, reason=f"cannot execute {args[0]}: {e}")
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return CommandResult(
                args,
                RunStatus.TIMEOUT,
                _text(out),
                _text(err),
                reason=f"timed out after {timeout:g} s",
            )
        except BaseException:
            # Ctrl-C: the command is in its own session, so the terminal's SIGINT never
            # reached it; end it with us (an fio of the full tier would write on for minutes).
            # SIGTERM first: fio's job processes leave its process group, and only fio
            # itself, told to stop, ends them.
            _end(proc)
            raise
        status = RunStatus.OK if proc.returncode == 0 else RunStatus.FAILED
        reason = "" if status is RunStatus.OK else f"exit code {proc.returncode}"
        return CommandResult(args, status, _text(out), _text(err), proc.returncode, reason)

    def environ(self) -> Mapping[str, str]:
        return dict(os.environ)

    @property
    def hostname(self) -> str:
        return socket.gethostname()


def _end(proc: subprocess.Popen[bytes], grace_s: float = 5.0) -> None:
    """SIGTERM to the command's process group, SIGKILL after ``grace_s``; reaped."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")
