"""The NVML read in a worker process, ended at its deadline.

NVML is a C library in this process: a driver that hangs (a GPU fallen off the bus, a
wedged kernel module) blocks ``nvmlInit`` or ``nvmlDeviceGetHandleByIndex`` in the
kernel, where no signal reaches it, and a health check that never ends never drains the
node either. So the read runs in a forked child (fork: it starts in about a millisecond
with pynvml already imported and the library already loaded, where spawning a fresh
interpreter would cost a tenth of a quick run) that sends the inventory back on a pipe,
preceded by the name of each NVML call it starts. At the deadline the parent kills it and
says which call it was waiting on: ``timed out after 60 s waiting on NVML
(nvmlDeviceGetHandleByIndex(3))``. A child stuck in the kernel cannot even be reaped
until the call returns; it is left to init and the run goes on.

Only a library that loads costs a child: the parent loads libnvidia-ml first (a dlopen,
no driver call), so a host without NVML answers ``not loaded: ...`` as before.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from typing import Any

from dolmen.host.deadline import Deadline
from dolmen.host.gpu.model import GpuInventory

# nvmlInit on 8 GPUs without persistence mode initialises each one: seconds, as for
# nvidia-smi (read.NVSMI_TIMEOUT).
NVML_TIMEOUT = 60.0
_REAP_WAIT = 0.5  # how long a killed child is given to be reaped before it is left to init


def read_nvml_bounded(
    deadline: Deadline, *, lib: Any = None, timeout: float = NVML_TIMEOUT
) -> GpuInventory | str:
    """``nvml.read_nvml(lib)`` in a child process, within ``timeout`` and the deadline;
    the inventory, or the reason NVML gave none (``not loaded``, ``timed out``, ...)."""
    import pynvml

    from dolmen.host.gpu.nvml import read_nvml

    lib = pynvml if lib is None else lib
    loaded = load_library(lib)
    if loaded:
        return loaded
    limit, cut = deadline.clip(timeout)
    if cut and limit <= 0:
        return f"{deadline.timed_out('NVML')} waiting on NVML (not started)"
    with deadline.waiting("NVML", call=True):
        return _in_child(lambda tell: read_nvml(_Traced(lib, tell)), limit, cut, deadline)


def load_library(lib: Any) -> str:
    """Load libnvidia-ml through pynvml's own loader (a dlopen, no driver call: no child
    is needed yet); "" when it loads or ``lib`` has no loader (a test's stand-in), else
    ``not loaded: <why>``. The one test of "is NVML here" before a worker starts."""
    import pynvml

    load = getattr(lib, "_LoadNvmlLibrary", None)
    if load is not None:
        try:
            load()
        except (pynvml.NVMLError, OSError) as e:
            return f"not loaded: {e}"
    return ""


class _Traced:
    """``lib`` whose ``nvml*`` functions first tell the parent their name (and the GPU)."""

    def __init__(self, lib: Any, tell: Any) -> None:
        self._lib = lib
        self._tell = tell
        self._gpu: int | None = None

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._lib, name)
        if not (name.startswith("nvml") and callable(attr)):
            return attr

        def traced(*args: Any) -> Any:
            if name == "nvmlDeviceGetHandleByIndex" and args and isinstance(args[0], int):
                self._gpu = args[0]
                self._tell(f"{name}({args[0]})")
            else:
                self._tell(name if self._gpu is None else f"{name} on GPU {self._gpu}")
            return attr(*args)

        return traced


def _in_child(fn: Any, limit: float, cut: bool, deadline: Deadline) -> GpuInventory | str:
    """Run ``fn(tell)`` in a forked child; its pickled result, or why there is none."""
    import pickle  # 5 ms a start: only where a library loaded, before the fork (both use it)

    r, w = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child: covered through its output
        _child(fn, r, w, parent)
    os.close(w)
    done = False
    try:
        data, last, done = _collect(r, limit)
    finally:
        os.close(r)
        _end(pid, ended=done)
    if not done:
        what = f"NVML ({last or 'nvmlInit'})"
        why = deadline.timed_out(what) if cut else f"timed out after {limit:g} s"
        return f"{why} waiting on {what}"
    if data is None:
        return f"unreadable: NVML worker ended without an answer, in {last or 'nvmlInit'}"
    try:
        kind, value = pickle.loads(data)
    except Exception as e:
        return f"unreadable: NVML worker: {e.__class__.__name__}: {e}"
    if kind != "ok":
        return f"unreadable: NVML worker: {value}"
    return value  # type: ignore[no-any-return]


def _child(
    fn: Any, r: int, w: int, parent: int
) -> None:  # pragma: no cover - runs in the forked child
    """Run ``fn``, write ``C<call>\\n`` lines then ``R<pickle>``, and exit without running
    the parent's exit handlers or flushing its buffers."""
    code = 0
    try:
        os.close(r)
        _die_with_parent(parent)

        def tell(what: str) -> None:
            os.write(w, f"C{what}\n".encode())

        try:
            answer: tuple[str, Any] = ("ok", fn(tell))
        except Exception as e:
            answer = ("error", f"{e.__class__.__name__}: {e}")
        import pickle  # imported by the parent before the fork: a lookup here

        payload = b"R" + pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(payload)
        while view:
            view = view[os.write(w, view) :]
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _die_with_parent(parent: int) -> None:  # pragma: no cover - runs in the forked child
    """The kernel kills the child if the parent dies first (a health check killed by its
    caller), so a child that is not stuck in the driver never outlives the run; a parent
    that died before the request leaves the child to end itself."""
    with contextlib.suppress(Exception):
        import ctypes  # loaded already: pynvml is built on it

        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)


def _collect(r: int, limit: float) -> tuple[bytes | None, str, bool]:
    """Read the child's pipe until EOF or ``limit`` seconds: the result's bytes (None when
    the child ended without one: killed, crashed), the last call it named, and whether it
    ended in time."""
    end = time.monotonic() + limit
    buf = bytearray()
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return None, _frames(buf)[1], False
        ready, _, _ = select.select([r], [], [], left)
        if ready:
            chunk = os.read(r, 1 << 16)
            if not chunk:
                result, last = _frames(buf)
                return result, last, True
            buf += chunk


def _frames(buf: bytearray) -> tuple[bytes | None, str]:
    """The result frame (``R<pickle>``, last) and the last call line (``C<call>\n``)."""
    last, pos = "", 0
    while pos < len(buf):
        if buf[pos] == ord("R"):
            return bytes(buf[pos + 1 :]), last
        nl = buf.find(b"\n", pos)
        if nl < 0:  # a call line cut by the deadline
            break
        last = buf[pos + 1 : nl].decode(errors="replace")
        pos = nl + 1
    return None, last


def _end(pid: int, *, ended: bool) -> None:
    """Reap the child: at once when it ``ended`` (its pipe closed as it exited), else kill
    it and wait at most ``_REAP_WAIT``: one stuck in the kernel is left to init."""
    if ended:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    stop = time.monotonic() + _REAP_WAIT
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done or time.monotonic() >= stop:
            return
        time.sleep(0.005)
