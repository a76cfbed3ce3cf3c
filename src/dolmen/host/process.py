"""Long-running processes on the live host: job ranks, detached supervisors, exec.

``Host.run`` is for commands that answer and exit; this module is for processes
dolmen starts and watches (``dolmen.jobs``): a rank with its log file and its own
process group, a supervisor detached from the terminal that outlives the CLI
(double fork), and ``exec_replace`` for launchers that become the command.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class SpawnError(OSError):
    """A process could not be started (missing binary, permission, bad folder)."""


class Child:
    """A process this one started, in its own process group (so its children go with it)."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen
        self.pid = popen.pid

    def poll(self) -> int | None:
        """Exit code once it ended (negative: killed by that signal), None while it runs."""
        return self._popen.poll()

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait up to ``timeout`` seconds; the exit code, or None if it still runs."""
        try:
            return self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the whole process group (absent group is fine)."""
        if self._popen.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)


def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | Path | None = None,
    log: Path | None = None,
    die_with_parent: bool = True,
) -> Child:
    """Start ``argv`` (never through a shell) in a new session, output appended to ``log``
    (None: this process's own stdout and stderr).

    ``die_with_parent``: the kernel SIGKILLs the child when this process dies
    (prctl PR_SET_PDEATHSIG), so a supervisor killed with -9 leaves no orphan ranks.
    """
    out = open(log, "ab") if log is not None else None  # noqa: SIM115
    try:
        popen = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT if log is not None else None,
            start_new_session=True,
            preexec_fn=_die_with_parent if die_with_parent else None,  # noqa: PLW1509
        )
    except OSError as e:
        raise SpawnError(e.errno, f"cannot start {argv[0]}: {e.strerror or e}") from e
    finally:
        if out is not None:
            out.close()
    return Child(popen)


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def spawn_detached(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: str | Path, log: Path
) -> int:
    """Start ``argv`` as a daemon (double fork, new session, stdin from /dev/null, output
    appended to ``log``) and return its pid. It survives this process and is nobody's
    child to reap. ``argv[0]`` must be a path (no PATH search). SpawnError if exec failed.
    """
    args = [str(a) for a in argv]
    r, w = os.pipe()  # close-on-exec: EOF on the reader means the exec happened
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the forked child
        code = 0
        try:
            os.close(r)
            os.setsid()
            if os.fork():
                os._exit(0)
            os.chdir(cwd)
            null = os.open(os.devnull, os.O_RDONLY)
            out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
            os.dup2(null, 0)
            os.dup2(out, 1)
            os.dup2(out, 2)
            os.closerange(3, w)
            os.write(w, f"{os.getpid()}\n".encode())
            os.execve(args[0], args, dict(env))
        except BaseException as e:
            code = 127
            with contextlib.suppress(OSError):
                os.write(w, f"E{e}\n".encode())
        finally:
            os._exit(code)
    os.close(w)
    os.waitpid(pid, 0)
    chunks = []
    with os.fdopen(r, "rb") as f:
        chunks.append(f.read())
    lines = b"".join(chunks).decode(errors="replace").splitlines()
    errors = [line[1:] for line in lines if line.startswith("E")]
    pids = [line for line in lines if line.isdigit()]
    if errors or not pids:
        raise SpawnError(0, f"cannot start {args[0]}: {errors[0] if errors else 'no pid'}")
    return int(pids[0])


def exec_replace(argv: Sequence[str], env: Mapping[str, str]) -> NoReturn:
    """Become ``argv`` (searched on ``env``'s PATH); SpawnError if it cannot run."""
    try:
        os.execvpe(argv[0], list(argv), dict(env))
    except OSError as e:
        raise SpawnError(e.errno, f"cannot run {argv[0]}: {e.strerror or e}") from e


def find_executable(name: str, *, path: str | None, cwd: str | Path | None = None) -> str | None:
    """Where ``name`` would run from: on ``path`` for a bare name, else relative to ``cwd``;
    None when it is absent or not executable."""
    if "/" in name:
        full = Path(cwd or os.getcwd()) / name
        return str(full) if full.is_file() and os.access(full, os.X_OK) else None
    return shutil.which(name, path=path)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (and is not a zombie we could see)."""
    if pid <= 0:  # kill(0) and kill(-n) reach process groups: they would always "succeed"
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie still answers kill(0); its state letter in /proc says Z
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def send_signal(pid: int, sig: int) -> bool:
    """Send ``sig`` to ``pid``; False when it no longer exists."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def free_port(address: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on now (the kernel's choice), for a rendezvous."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])
