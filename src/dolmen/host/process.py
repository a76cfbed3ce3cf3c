"""Long-running processes on the live host: job ranks, detached supervisors, exec.

``Host.run`` is for commands that answer and exit; this module is for processes
dolmen starts and watches (``dolmen.jobs``): a rank with its log file and its own
process group, a supervisor detached from the terminal that outlives the CLI
(double fork), and ``exec_replace`` for launchers that become the command.

A job's processes are a tree that outlives any one of its members: a rank's
data-loader workers, a shell wrapper's children, a torchrun's workers. ``JobTree``
finds all of them from any process (cancel, status, the next supervisor), even
after the supervisor was SIGKILLed, by two marks: the job's cgroup v2 folder where
the machine lets us make one (``cgroup.kill`` ends it in one write; no process can
leave it unless root moves it), and the job's marker in each process's environment
(inherited by every descendant that does not clear its environment). Process groups
are not a mark: once a rank is gone its group id may be anyone's. The supervisor is
also a child subreaper (PR_SET_CHILD_SUBREAPER), so a rank's orphans stay its
descendants while it lives.
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
_PR_SET_CHILD_SUBREAPER = 36
CGROUP_PARENT = "dolmen.jobs"  # our folder under the cgroup v2 mount


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
    cgroup: Path | None = None,
) -> Child:
    """Start ``argv`` (never through a shell) in a new session, output appended to ``log``
    (None: this process's own stdout and stderr).

    ``die_with_parent``: the kernel SIGKILLs the child when this process dies
    (prctl PR_SET_PDEATHSIG), so a supervisor killed with -9 leaves no orphan ranks.
    ``cgroup``: a cgroup v2 folder the child joins before it runs (``JobTree.cgroup``).
    """
    out = open(log, "ab") if log is not None else None  # noqa: SIM115
    parent = os.getpid()

    def setup() -> None:  # pragma: no cover - runs in the forked child
        if die_with_parent:
            _die_with_parent()
            # A parent that died between the fork and the prctl sends no signal: the child
            # would run on, an orphan whose environment (the parent's until exec) does not
            # carry the job's marker yet, so a cancel scanning for it then finds nothing.
            if os.getppid() != parent:
                os._exit(1)
        if cgroup is not None:
            with contextlib.suppress(OSError):  # the other marks still hold
                (cgroup / "cgroup.procs").write_text("0\n")

    try:
        popen = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT if log is not None else None,
            start_new_session=True,
            preexec_fn=setup if die_with_parent or cgroup else None,  # noqa: PLW1509
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


def become_subreaper() -> bool:
    """Make this process the reaper of its descendants' orphans; False where refused."""
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0


def reap_orphans(keep: set[int]) -> None:
    """Collect the exit of adopted children (a subreaper's duty) except ``keep``'s, so
    that they do not stay zombies; never touches the processes ``keep`` names."""
    me = os.getpid()
    for pid in _pids():
        if pid in keep or _stat(pid).get("ppid") != me:
            continue
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


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


class JobTree:
    """Every process of one job, found by its cgroup and its marker (module docstring).

    ``marker`` is the value of ``env_key`` in the ranks' environment (unique per job);
    ``cgroup_name`` the job's folder under the cgroup v2 mount (made by ``make_cgroup``).
    """

    def __init__(self, env_key: str, marker: str) -> None:
        self.needle = f"{env_key}={marker}".encode()
        self.cgroup = _cgroup_mount()
        if self.cgroup is not None:
            self.cgroup = self.cgroup / CGROUP_PARENT / marker

    def make_cgroup(self) -> Path | None:
        """Create the job's cgroup v2 folder; None where the machine does not allow it
        (no cgroup v2 mount, not root, no cgroup.kill): the other marks then suffice."""
        if self.cgroup is None:
            return None
        try:
            self.cgroup.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None
        return self.cgroup if (self.cgroup / "cgroup.kill").exists() else None

    def pids(self) -> set[int]:
        """The job's live processes now (never this process)."""
        found: set[int] = set()
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                found |= {int(p) for p in (self.cgroup / "cgroup.procs").read_text().split()}
        for pid in _pids():
            if pid in found:
                continue
            try:
                env = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                continue
            if self.needle in env.split(b"\0"):
                found.add(pid)
        found.discard(os.getpid())
        return {p for p in found if _stat(p).get("state") not in ("Z", "X", None)}

    def kill(
        self, grace: float = 0.0, *, timeout: float = 10.0, keep: Sequence[int] = ()
    ) -> set[int]:
        """SIGTERM the whole job, SIGKILL what is left after ``grace`` seconds, wait up to
        ``timeout`` for it to go, remove the cgroup; the pids that survived (none, normally).
        ``keep``: children whose exit status their owner still collects (not reaped here)."""
        import time

        live = self.pids()
        if grace > 0 and live:
            self._signal(live, signal.SIGTERM)
            deadline = time.monotonic() + grace
            while live and time.monotonic() < deadline:
                time.sleep(0.05)
                live = self.pids()
        deadline = time.monotonic() + timeout
        while live and time.monotonic() < deadline:
            if self.cgroup is not None:
                with contextlib.suppress(OSError):
                    (self.cgroup / "cgroup.kill").write_text("1\n")
            self._signal(live, signal.SIGKILL)  # also reaches those that forked meanwhile
            time.sleep(0.02)
            reap_orphans(set(keep))
            live = self.pids()
        if not live:
            self.release()
        return live

    def release(self) -> None:
        """Remove the job's cgroup folder once it is empty, and the shared parent with the
        last job (rmdir fails while another job's folder is in it), so nothing of dolmen
        stays in the cgroup tree when idle; a job whose mkdir races this falls back to its
        marker, which still finds it. A folder that still holds processes stays."""
        if self.cgroup is None:
            return
        with contextlib.suppress(OSError):
            self.cgroup.rmdir()
        with contextlib.suppress(OSError):
            self.cgroup.parent.rmdir()

    @staticmethod
    def _signal(pids: set[int], sig: int) -> None:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)


def _pids() -> list[int]:
    try:
        return [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []


def _stat(pid: int) -> dict[str, object]:
    """state, ppid and pgrp of a process from /proc/<pid>/stat; {} when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return {}
    fields = text.rpartition(")")[2].split()
    if len(fields) < 3:
        return {}
    return {"state": fields[0], "ppid": int(fields[1]), "pgrp": int(fields[2])}


def _cgroup_mount() -> Path | None:
    """Where cgroup v2 is mounted (``/sys/fs/cgroup`` or a hybrid's ``.../unified``)."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        if len(parts) > 2 and parts[2] == "cgroup2":
            return Path(parts[1])
    return None
