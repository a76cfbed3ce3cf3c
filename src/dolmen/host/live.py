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
_REAP_WAIT = 2.0  # seconds a killed command is given to end and close its output


class LiveHost(Host):
    """The machine dolmen runs on; ``root`` is where its files are read (``/``, or the
    node's ``/`` mounted into a container: ``open_live``). Commands always run here."""

    kind = "live"

    def __init__(self, root: Path = Path("/")) -> None:
        super().__init__(root)

    def path(self, rel: str) -> Path:
        return self.root / rel.lstrip("/")

    def run(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, key: str | None = None
    ) -> CommandResult:
        args = tuple(argv)
        what = " ".join(args)
        limit, cut = self.deadline.clip(timeout)
        if cut and limit <= 0:  # the run is out of time: a command would not get a second
            return CommandResult(args, RunStatus.TIMEOUT, reason=self.deadline.timed_out(what))
        with self.deadline.waiting(what, call=True):
            return self._run(args, limit, cut)

    def _run(self, args: tuple[str, ...], limit: float, cut: bool) -> CommandResult:
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
            out, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            _kill(proc)
            out, err = _drain(proc)
            why = self.deadline.timed_out(" ".join(args)) if cut else f"timed out after {limit:g} s"
            return CommandResult(args, RunStatus.TIMEOUT, _text(out), _text(err), reason=why)
        except BaseException:
            # A check's time limit (SIGALRM), ^C: the command goes too. It is in its own
            # session, so the terminal's SIGINT never reached it (an fio of the full tier would
            # write on for minutes). SIGTERM first: fio's job processes leave its process
            # group, and only fio itself, told to stop, ends them.
            _end(proc)
            raise
        status = RunStatus.OK if proc.returncode == 0 else RunStatus.FAILED
        reason = "" if status is RunStatus.OK else f"exit code {proc.returncode}"
        return CommandResult(args, status, _text(out), _text(err), proc.returncode, reason)

    def environ(self) -> Mapping[str, str]:
        return dict(os.environ)

    @property
    def hostname(self) -> str:
        if str(self.root) != "/":
            # A container's UTS name is its own unless it shares the node's (hostNetwork);
            # the node's configured name is in its /etc/hostname.
            name = (self.read_value("etc/hostname") or "").split()
            if name:
                return name[0]
        return socket.gethostname()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the command's process group (its own session): its children go with it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _drain(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """What a killed command printed, waiting ``_REAP_WAIT`` at most: a process stuck in
    the kernel (a hard NFS mount, a wedged driver) is not gone yet, and a child that left
    the group may hold the pipes open; neither may hold the run. Popen reaps it later."""
    try:
        return proc.communicate(timeout=_REAP_WAIT)
    except subprocess.TimeoutExpired:
        for pipe in (proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()
        return b"", b""


def _end(proc: subprocess.Popen[bytes], grace_s: float = 2.0) -> None:
    """SIGTERM to the command's process group, SIGKILL after ``grace_s``, then
    ``_REAP_WAIT`` at most for it to go (a process stuck in the kernel may not)."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, _REAP_WAIT)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")
