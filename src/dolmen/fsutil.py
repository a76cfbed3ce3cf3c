"""Durable file writes for dolmen's own files, the hosts it changes, and the outputs
users name (``--junit``, ``--prometheus``, ``-o``).

An output path is someone's file (STYLE.md rule 21): dolmen writes only regular files
there, never replaces a device, FIFO, socket or folder (as root, a rename over
``/dev/full`` would replace the device node), and never creates missing folders.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from dolmen.errors import DolmenError, EnvironmentProblem, UsageError

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)
_ONLY_FILES = "dolmen writes only regular files: name a file path"


def output_target(path: Path, *, what: str = "output") -> Path:
    """The regular file to write for a user-named output ``path``, checked before any work.

    Refused with one line (exit 2): a path that is, or links to, anything but a regular
    file; a link to nothing; a folder that does not exist. A folder dolmen may not write
    in is the environment refusing (exit 3). A link to a regular file is followed, so the
    link stays and its target gets the new bytes.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise UsageError(
                f"{what} {path} is a symbolic link to nothing", hint=_ONLY_FILES
            ) from None
        st = None
    except OSError as e:
        raise UsageError(f"{what} {path}: {e.strerror}", hint=_ONLY_FILES) from None
    if st is not None:
        for test, kind in _KINDS:
            if test(st.st_mode):
                raise UsageError(f"{what} {path} is {kind}, not a regular file", hint=_ONLY_FILES)
    real = Path(os.path.realpath(path))
    output_folder(real.parent, what=f"{what} {path}:")
    return real


def output_folder(folder: Path, *, what: str = "output") -> Path:
    """An existing folder dolmen may write in (a tree goes there); never created."""
    if not folder.is_dir():
        raise UsageError(
            f"{what} folder {folder} does not exist",
            hint="create it first (dolmen does not create folders for its outputs)",
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise EnvironmentProblem(
            f"{what} cannot write in {folder} (permission denied)",
            hint="run as a user who may write there, or name another path",
        )
    return folder


def write_output(path: Path, payload: bytes, *, what: str = "output") -> None:
    """Write a user-named output file atomically, after :func:`output_target`'s checks."""
    target = output_target(path, what=what)
    try:
        atomic_write(target, payload)
    except OSError as e:
        raise write_failure(f"{what} {path}", e, target.parent, "nothing was changed") from None


# The causes of a failed write that a user can act on, by errno: the words the message
# gives and the hint. Anything else is named by the system's own words.
_FULL = ("the disk is full", "free space there, or name a path on another disk")
_CAUSES = {
    errno.ENOSPC: _FULL,
    errno.EDQUOT: ("over the disk quota", "free space within your quota, or name another path"),
    errno.EROFS: ("the file system is read-only", "name a path on a writable file system"),
    errno.EACCES: ("permission denied", "run as a user who may write there, or name another path"),
    errno.EPERM: ("not permitted", "run as a user who may write there, or name another path"),
}


def write_failure(what: str, e: OSError, folder: Path, left: str) -> DolmenError:
    """The one line (and hint) for a write of ``what`` into ``folder`` that failed with ``e``:
    its cause in words, never "free space" for a folder that cannot hold files. A folder
    that is there yet says ENOENT for a new file (or EACCES to root) is a kernel one
    (/proc, /sys): bad input
    (exit 2); the other causes are the environment refusing (exit 3). ``left`` says what
    was left as it was ("nothing was changed")."""
    kernel = e.errno in (errno.EACCES, errno.EPERM) and os.geteuid() == 0  # /sys: even root
    if e.errno in (errno.ENOENT, errno.ENOTDIR) or kernel:
        return UsageError(
            f"{what}: could not write: {folder} cannot hold new files ({e.strerror})",
            hint=f"name a path in an ordinary folder (not /proc or /sys); {left}",
        )
    cause, hint = write_cause(e)
    return EnvironmentProblem(f"{what}: could not write ({cause})", hint=f"{hint}; {left}")


def write_cause(e: OSError) -> tuple[str, str]:
    """A failed write's cause in words a user can act on ("the disk is full") and the
    hint that fits; the system's own words for any other errno."""
    return _CAUSES.get(e.errno or 0, (e.strerror or str(e), "see the cause above"))


def atomic_write(target: Path, payload: bytes, *, mode: int | None = None) -> None:
    """Replace ``target`` with ``payload`` atomically and durably.

    A temporary file in the same folder is written, fsync'd, renamed over the
    target, then the folder is fsync'd: readers see the old or the new bytes,
    never a mix, and a power loss after return keeps the new ones. An existing
    file keeps its permission bits unless ``mode`` is given. An existing target that is
    not a regular file or a link (a folder, device, FIFO, socket) is refused with
    ``IsADirectoryError`` or ``FileExistsError``: the rename would destroy it.
    """
    with contextlib.suppress(FileNotFoundError):
        st = os.lstat(target)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(f"{target} is a folder")
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            raise FileExistsError(f"{target} exists and is not a regular file")
    target.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            mode = 0o644
    tmp = target.parent / f".{target.name}.dolmen-tmp-{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)


def fsync_dir(folder: Path) -> None:
    """fsync a folder so a rename or unlink in it is durable."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class NotRegularFile(OSError):
    """A read of something that is not a regular file (a FIFO would block for ever, a
    character device would stream without end), refused before it is opened for reading."""


class TooLarge(OSError):
    """A read of a file larger than the reader's cap (a sparse gigabyte, a runaway log)."""


def kind_of(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words (``a FIFO``, ``a character device``)."""
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "a symbolic link" if stat.S_ISLNK(mode) else "a regular file"


def not_utf8(e: UnicodeDecodeError) -> str:
    """A decode failure in a user's words, ``not UTF-8 text (byte 12)``: never Python's
    codec text ("'utf-8' codec can't decode byte 0xff in position 12: ...")."""
    return f"not UTF-8 text (byte {e.start})"


def missing_folders(folder: Path, top: Path) -> list[Path]:
    """``folder`` and those of its parents below ``top`` that do not exist yet, deepest
    first: what a ``mkdir(parents=True)`` makes, and what a failed write takes back."""
    missing: list[Path] = []
    while folder != top and not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def remove_empty(folders: Iterable[Path]) -> None:
    """Remove each folder if it is empty (deepest first), silently keeping any other."""
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()


def not_regular(paths: Iterable[Path]) -> tuple[Path, str] | None:
    """The first of ``paths`` that is there and is not a regular file, and what it is
    (``a FIFO``; a link included, for writers that never follow one, such as the audit
    log's); None when each is a regular file or absent."""
    for path in paths:
        try:
            mode = os.lstat(path).st_mode
        except OSError:  # absent (the writer makes it), or its write says why
            continue
        if not stat.S_ISREG(mode):
            return path, kind_of(mode)
    return None


def not_a_file(path: Path | str, what: str) -> str:
    """Why ``path``, which is not a regular file, is no ``what``: "no such <what>" when
    nothing is there, else what it is ("a FIFO, not a <what>"), so a FIFO or a folder
    is never reported as missing."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            return f"a symbolic link to nothing, not a {what}"
        return f"no such {what}"
    except OSError as e:
        return f"cannot read the {what}: {e.strerror}"
    return f"{kind_of(mode)}, not a {what}"


def read_regular(path: Path | str, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; OSError otherwise.

    Inputs (host trees, configurations, baselines, profiles) may hold anything: a FIFO
    would block the read for ever and ``/dev/zero`` would fill memory. The file is
    ``stat``'d before it is opened, opened non-blocking, checked again on the open
    descriptor (it may have been swapped in between), and read in chunks up to
    ``limit + 1`` bytes, so neither a lying ``st_size`` (procfs says 0) nor a growing
    file costs more than ``limit``. Refusals are ``NotRegularFile`` (``EINVAL``) and
    ``TooLarge`` (``EFBIG``): an ``except OSError`` that reports ``strerror`` reads
    "not a regular file (a FIFO)" or "larger than 64 MiB".
    """
    # Reads of chunk size up to limit + 1: what iter_regular refuses past the limit.
    return b"".join(iter_regular(path, limit, min(1 << 20, limit + 1)))


def iter_regular(path: Path | str, limit: int, chunk: int = 1 << 20) -> Iterator[bytes]:
    """``read_regular`` in chunks, for an input too large to hold (a kernel log of millions
    of lines): the same refusals, checked before the first chunk; ``TooLarge`` once more
    than ``limit`` bytes came."""
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(
            errno.EINVAL, f"not a regular file ({kind_of(st.st_mode)[2:]})", str(path)
        )
    if st.st_size > limit:
        raise TooLarge(errno.EFBIG, f"larger than {_amount(limit)}", str(path))
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", str(path))
        size = 0
        while data := os.read(fd, chunk):
            size += len(data)
            if size > limit:
                raise TooLarge(errno.EFBIG, f"larger than {_amount(limit)}", str(path))
            yield data
    finally:
        os.close(fd)


def _amount(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"
