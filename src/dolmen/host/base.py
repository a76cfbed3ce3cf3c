"""The one door to the machine: a ``Host`` reads files and runs commands under a root.

A host is live (root ``/``), a directory tree, or a snapshot archive opened as a
tree. Paths are written without the leading slash (``proc/cpuinfo``). A file or
command absent from a tree means "not available on that host", exactly as on a
live host, so the same code path runs in both cases.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import stat
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dolmen.fsutil import atomic_write, fsync_dir, iter_regular, missing_folders, read_regular
from dolmen.host.command import CommandResult
from dolmen.host.deadline import Deadline

if TYPE_CHECKING:
    from dolmen.host.gpu.model import GpuInventory

DEFAULT_TIMEOUT = 10.0
# The most one read takes in. `dolmen snapshot` keeps files up to 16 MiB and the largest
# recordings (lspci -vvv, procfs fixtures) are about 1 MiB; the kernel's log buffer is at
# most 32 MiB (CONFIG_LOG_BUF_SHIFT=25), so `commands/dmesg` fits too.
MAX_READ = 64 << 20
# The most a streamed read (``read_chunks``) takes in, a chunk at a time: a rotated syslog
# or a journal export given as a bundle's kernel log can be gigabytes.
MAX_STREAM = 4 << 30


class Host(ABC):
    """A machine to read from, live or recorded. See module docstring."""

    kind: str = "abstract"

    def __init__(self, root: Path) -> None:
        self.root = root
        # The run's deadline and what it waits on (host/deadline.py): a validate run sets
        # its own; ``run`` and the GPU readers wait no longer than it allows.
        self.deadline = Deadline()

    # --- files -----------------------------------------------------------------
    @abstractmethod
    def path(self, rel: str) -> Path:
        """The real path of ``rel`` (host-relative, no leading slash), confined to the root."""

    def read_bytes(self, rel: str) -> bytes:
        """The bytes of a regular file of at most ``MAX_READ``; raises OSError otherwise
        (FileNotFoundError, PermissionError, and ``fsutil.NotRegularFile`` or ``TooLarge``
        for a FIFO that would block for ever or a device that never ends)."""
        return read_regular(self.path(rel), MAX_READ)

    def read_chunks(self, rel: str, *, limit: int = MAX_STREAM) -> Iterator[bytes]:
        """A regular file in 1 MiB chunks, never held whole (a kernel log of millions of
        lines); the refusals of ``read_bytes``, raised as the iteration starts."""
        return iter_regular(self.path(rel), limit)

    def read(self, rel: str) -> str:
        """The text of a file (UTF-8, undecodable bytes replaced); raises OSError."""
        return self.read_bytes(rel).decode("utf-8", errors="replace")

    def read_opt(self, rel: str) -> str | None:
        """The text of a file, or None when it is absent or unreadable."""
        try:
            return self.read(rel)
        except OSError:
            return None

    def read_value(self, rel: str) -> str | None:
        """A one-value file (sysfs, procfs) stripped of whitespace, or None when unreadable."""
        text = self.read_opt(rel)
        return None if text is None else text.strip()

    def absent(self, rel: str) -> str:
        """The reason words for ``rel`` not being there (docs/architecture.md): ``missing``
        where the host vouches that it is absent (a live host, a whole snapshot), else
        ``not in this bundle`` (a pasted file, a tree that did not record that part: absence
        of a source is not evidence of absence). Callers add the path, as after ``missing``."""
        return "missing"

    def exists(self, rel: str) -> bool:
        """Whether ``rel`` exists (following links inside the host)."""
        return self.path(rel).exists()

    def is_dir(self, rel: str) -> bool:
        """Whether ``rel`` is a directory (following links inside the host)."""
        return self.path(rel).is_dir()

    def listdir(self, rel: str) -> list[str]:
        """Sorted names in a directory; [] when it is absent or unreadable."""
        try:
            return sorted(os.listdir(self.path(rel)))
        except OSError:
            return []

    def readlink(self, rel: str) -> str | None:
        """The target of a symbolic link as stored, or None when ``rel`` is not a link."""
        try:
            return os.readlink(self.path_nofollow(rel))
        except OSError:
            return None

    def path_nofollow(self, rel: str) -> Path:
        """The real path of ``rel`` with its last component not followed."""
        parent, _, name = rel.strip("/").rpartition("/")
        return (self.path(parent) if parent else self.root) / name

    def missing_folders(self, rel: str) -> list[str]:
        """The folders a write of ``rel`` creates, deepest first, host-relative as the write
        resolves them: a tree's ``etc`` that links to ``/elsewhere/etc`` has the write make
        ``elsewhere/etc`` inside the tree, and a rollback must remove that, not the link."""
        made = missing_folders(self.path(rel).parent, self.root)
        return [str(folder.relative_to(self.root)) for folder in made]

    def glob(self, pattern: str) -> list[str]:
        """Host-relative paths matching a shell pattern, component by component, sorted."""
        parts = [p for p in pattern.strip("/").split("/") if p]
        found = [""]
        for part in parts:
            nxt: list[str] = []
            for base in found:
                if any(ch in part for ch in "*?["):
                    names = fnmatch.filter(self.listdir(base), part)
                else:
                    names = [part] if self.exists(_join(base, part)) else []
                nxt.extend(_join(base, n) for n in names)
            found = nxt
        return sorted(found)

    def mode(self, rel: str) -> int | None:
        """The permission bits of a file (following links), or None when absent."""
        try:
            return stat.S_IMODE(os.stat(self.path(rel)).st_mode)
        except OSError:
            return None

    def writable(self, rel: str) -> bool:
        """Whether this process may write ``rel`` now, as the kernel decides (``access(2)``).

        Kernel files say more than their mode bits: a per-namespace sysctl such as
        ``net.core.rmem_max`` is read-only, even for root, outside the initial network
        namespace.
        """
        return os.access(self.path(rel), os.W_OK)

    # --- writes (the change flow: tune, stack, ...) ------------------------------------
    def write(self, rel: str, data: str | bytes, *, mode: int | None = None) -> None:
        """Write a file on the host.

        Kernel files (``proc/``, ``sys/``) are written in place, as the kernel expects.
        Other files are replaced atomically: a temporary file in the same folder,
        fsync'd, renamed over the target, then the folder fsync'd. An existing file
        keeps its permission bits unless ``mode`` is given.
        """
        payload = data.encode() if isinstance(data, str) else data
        rel = rel.strip("/")
        target = self.path(rel)
        if rel.startswith(("proc/", "sys/")):
            with open(target, "wb", buffering=0) as f:
                f.write(payload)
            return
        atomic_write(target, payload, mode=mode)

    def remove(self, rel: str) -> None:
        """Remove a regular file (absent is fine) and fsync its folder."""
        target = self.path_nofollow(rel)
        try:
            target.unlink()
        except FileNotFoundError:
            return
        fsync_dir(target.parent)

    def remove_dir(self, rel: str) -> bool:
        """Remove an empty folder and fsync its parent; False when it is absent or not empty.

        Rollbacks remove the folders an apply created (``/etc/default/grub.d``), so the
        host is left exactly as it was found.
        """
        target = self.path_nofollow(rel)
        try:
            target.rmdir()
        except OSError:
            return False
        fsync_dir(target.parent)
        return True

    def make_dir(self, rel: str, mode: int) -> None:
        """Make ``rel`` a folder with exactly ``mode`` (sticky bit included), creating it
        and missing parents (0755); an existing folder only gets ``mode``. Anything else
        at the path (a file, a FIFO, a link) is refused with FileExistsError."""
        target = self.path_nofollow(rel)
        try:
            st = os.lstat(target)
        except FileNotFoundError:
            missing = []
            parent = rel.strip("/").rpartition("/")[0]
            while parent and not os.path.lexists(self.path_nofollow(parent)):
                missing.append(parent)
                parent = parent.rpartition("/")[0]
            for folder in reversed(missing):  # top down, each 0755 whatever the umask
                made = self.path_nofollow(folder)
                made.mkdir(mode=0o700)
                os.chmod(made, 0o755)
            target.mkdir(mode=0o700)
            fsync_dir(target.parent)
        else:
            if not stat.S_ISDIR(st.st_mode):
                raise FileExistsError(f"{target} exists and is not a folder")
        os.chmod(target, mode)  # mkdir's mode goes through the umask; chmod does not

    def remove_tree(self, rel: str) -> None:
        """Remove a folder and everything in it (absent is fine), without following links
        inside it (``shutil.rmtree`` works by file descriptors on Linux), then fsync its
        parent. Only for folders dolmen made (compile caches a rollback takes back)."""
        target = self.path_nofollow(rel)
        if not os.path.lexists(target):
            return
        if not stat.S_ISDIR(os.lstat(target).st_mode):
            raise NotADirectoryError(f"{target} is not a folder")
        shutil.rmtree(target)
        fsync_dir(target.parent)

    # --- commands --------------------------------------------------------------
    @abstractmethod
    def run(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, key: str | None = None
    ) -> CommandResult:
        """Run a command (never through a shell) and return what it printed.

        ``key`` names the command's file in a host tree when the live argv varies
        (``dmesg`` is recorded as ``commands/dmesg`` whatever options ran live).
        """

    @abstractmethod
    def environ(self) -> Mapping[str, str]:
        """The environment of the host's user session (PATH, CUDA_HOME, LD_LIBRARY_PATH...)."""

    # --- identity and GPUs -------------------------------------------------------
    @property
    @abstractmethod
    def hostname(self) -> str:
        """The host's name."""

    @cached_property
    def gpus(self) -> GpuInventory:
        """GPU inventory: NVML when libnvidia-ml loads (live), else ``nvidia-smi -q -x``."""
        # The readers (an XML parser, NVML) load only for the runs that ask for GPUs.
        from dolmen.host.gpu.read import read_gpus

        return read_gpus(self)

    def describe(self) -> dict[str, Any]:
        """What this host is, for reports: kind, root, name."""
        return {"kind": self.kind, "root": str(self.root), "hostname": self.hostname}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what opening the host took (a snapshot's temporary folder)."""

    def __enter__(self) -> Host:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _join(base: str, name: str) -> str:
    return f"{base}/{name}" if base else name
