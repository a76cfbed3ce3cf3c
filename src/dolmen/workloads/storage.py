"""Sequential and random read/write with direct I/O on each data mount.

Which mounts: the request's ``scratch`` (the site's ``[workloads] scratch`` list) when it
names any; else every *data mount* of the storage facts: a disk or network file system,
mounted read-write, that is not part of the operating system (``/``, ``/boot``,
``/boot/efi``, ``/efi``, ``/usr``, ``/var`` and anything under ``/boot``, ``/snap``,
``/var/lib/docker``...). On a DGX that is ``/raid``; on a workstation often nothing, and
the workload says so with the remedy.

Engine: fio when it answers ``fio --version`` (``storage_fio``: one run, JSON parsed), else
the built-in one (``storage_builtin``). Each mount gets a test file of its own
(``.dolmen-io-<pid>-<random>.tmp``), removed whatever happens, Ctrl-C included (a
SIGKILLed run leaves it: the name says whose it is). A mount without room for the file
plus a reserve is refused with one line, and the others still run.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any

from dolmen.frozen import frozen
from dolmen.host import Host, RunStatus
from dolmen.workloads import storage_builtin as builtin
from dolmen.workloads.model import Aborted, Request, Unavailable
from dolmen.workloads.storage_fio import PHASES, SEQ_BLOCK, SEQ_DEPTH, fio_argv, parse_fio_json

FILE_BYTES = 1 << 30
SMOKE_FILE_BYTES = 8 << 20
MIN_RESERVE = 64 << 20  # left free besides the test file, at least 1% of the file system
SMOKE_PHASE_S = 0.25
SYSTEM_MOUNTS = frozenset({"/", "/boot", "/boot/efi", "/efi", "/usr", "/var", "/var/log"})
SYSTEM_PREFIXES = ("/boot/", "/snap/", "/var/lib/docker", "/var/lib/containerd", "/run/")
DATA_KINDS = frozenset({"disk", "network"})


@frozen
class MountResult:
    """One mount's four figures; MB/s = 1e6 bytes/s. ``direct`` False: O_DIRECT was
    refused and the figures went through the page cache (``note`` says so)."""

    mount: str
    engine: str  # "fio" | "builtin"
    file_bytes: int
    seq_read_mbps: float
    seq_write_mbps: float
    rand_read_iops: float | None
    rand_write_iops: float | None
    direct: bool = True
    note: str | None = None


@frozen
class StorageResult:
    """Every mount measured, and those refused (mount -> the one-line reason)."""

    mounts: tuple[MountResult, ...]
    refused: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """docs/validate-full.md's ``storage`` shape, plus ``direct``, ``note``, ``refused``."""
        return {
            "mounts": [
                {
                    "mount": m.mount,
                    "engine": m.engine,
                    "file_bytes": m.file_bytes,
                    "seq_read_mbps": m.seq_read_mbps,
                    "seq_write_mbps": m.seq_write_mbps,
                    "rand_read_iops": m.rand_read_iops,
                    "rand_write_iops": m.rand_write_iops,
                    "direct": m.direct,
                    "note": m.note,
                }
                for m in self.mounts
            ],
            "refused": dict(self.refused),
        }


def data_mounts(mounts: Sequence[Any]) -> list[str]:
    """The data mounts among ``facts.storage`` mounts (module docstring), sorted."""
    out = []
    for m in mounts:
        point = m.mountpoint
        if m.kind not in DATA_KINDS or m.read_only or point in SYSTEM_MOUNTS:
            continue
        if point.startswith(SYSTEM_PREFIXES):
            continue
        out.append(point)
    return sorted(set(out))


def run(request: Request, host: Host | None = None) -> StorageResult:
    """Measure every mount of the request (module docstring)."""
    if host is None:
        from dolmen.host.live import LiveHost

        host = LiveHost()
    mounts = list(request.scratch) or _from_facts(host)
    file_bytes = SMOKE_FILE_BYTES if request.smoke else FILE_BYTES
    share = request.budget_s / len(mounts)
    phase_s = SMOKE_PHASE_S if request.smoke else max(1.0, share / 5)
    use_fio = host.run(("fio", "--version"), timeout=10.0).status is RunStatus.OK
    results: list[MountResult] = []
    refused: dict[str, str] = {}
    for i, mount in enumerate(mounts):
        request.progress(f"storage {mount}", i / len(mounts), share * (len(mounts) - i))
        try:
            results.append(measure(host, mount, file_bytes, phase_s, use_fio=use_fio))
        except Refused as e:
            refused[mount] = str(e)
        except KeyboardInterrupt:
            raise Aborted("storage") from None
    request.progress("storage", 1.0, 0.0)
    return StorageResult(tuple(results), refused)


def _from_facts(host: Host) -> list[str]:
    from dolmen.facts.storage import collect

    found = data_mounts(collect(host).mounts)
    if not found:
        raise Unavailable(
            "no data mount found (a disk or network file system outside the OS's own): "
            'name the folders to test in dolmen.toml, [workloads] scratch = ["/raid"]'
        )
    return found


class Refused(Exception):
    """One mount cannot be tested (no room, not a writable folder): the one-line reason."""


def room(mount: str, file_bytes: int) -> None:
    """Refused unless ``mount`` is a writable folder with the file plus a reserve free."""
    try:
        st = os.statvfs(mount)
    except OSError as e:
        raise Refused(f"{mount}: cannot be read ({e.strerror or e})") from None
    if not os.path.isdir(mount) or not os.access(mount, os.W_OK | os.X_OK):
        raise Refused(f"{mount}: not a folder this user may write to")
    free = st.f_bavail * st.f_frsize
    need = file_bytes + max(MIN_RESERVE, st.f_blocks * st.f_frsize // 100)
    if free < need:
        raise Refused(
            f"{mount}: {free / 1e9:.2f} GB free, {need / 1e9:.2f} GB needed for a "
            f"{file_bytes / 1e9:.2f} GB test file and its reserve: free space, or leave it out "
            "of [workloads] scratch"
        )


def measure(
    host: Host, mount: str, file_bytes: int, phase_s: float, *, use_fio: bool
) -> MountResult:
    """The four phases on a fresh file under ``mount``, removed whatever happens."""
    file_bytes = max(SEQ_DEPTH * SEQ_BLOCK, file_bytes // SEQ_BLOCK * SEQ_BLOCK)
    room(mount, file_bytes)
    path = os.path.join(mount, f".dolmen-io-{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        note = None
        if use_fio:
            got = _fio(host, path, mount, file_bytes, phase_s)
            if isinstance(got, MountResult):
                return got
            note = f"fio failed ({got}): measured with the built-in engine"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        return _builtin(path, mount, file_bytes, phase_s, note)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _fio(host: Host, path: str, mount: str, file_bytes: int, phase_s: float) -> MountResult | str:
    """fio's figures, direct first, buffered where O_DIRECT was refused; else why not."""
    note = None
    for direct in (True, False):
        # The write lays out the file once; allow it a slow disk (50 MB/s), then the reads.
        timeout = file_bytes / 50e6 + 3 * phase_s + 60
        res = host.run(fio_argv(path, file_bytes, phase_s, direct=direct), timeout=timeout)
        report = parse_fio_json(res.stdout)
        if report.problem:
            return f"{res.failure() if not res.ok else report.problem}"
        errors = {n: j.error for n, j in report.jobs.items() if j.error}
        if direct and errno.EINVAL in errors.values():
            note = "O_DIRECT refused here: fio ran buffered (invalidate=1, end_fsync=1)"
            continue
        missing = [p for p in PHASES if p not in report.jobs]
        if errors or missing:
            bad = [f"{n}: error {e}" for n, e in errors.items()]
            return "; ".join(bad or [f"{n}: missing from fio's report" for n in missing])
        j = report.jobs
        return MountResult(
            mount,
            "fio",
            file_bytes,
            j["seq_read"].read_bytes_s / 1e6,
            j["seq_write"].write_bytes_s / 1e6,
            j["rand_read"].read_iops,
            j["rand_write"].write_iops,
            direct,
            note,
        )
    return "fio refused direct and buffered I/O"


def _builtin(
    path: str, mount: str, file_bytes: int, phase_s: float, note: str | None
) -> MountResult:
    fd, direct = builtin.open_file(path)
    if not direct:
        why = "O_DIRECT refused here: buffered, pages dropped before each read (fadvise)"
        note = f"{note}; {why}" if note else why
    try:
        write = builtin.seq_write(fd, file_bytes)
        builtin.drop_cache(fd, direct)
        read = builtin.seq_read(fd, file_bytes, phase_s)
        builtin.drop_cache(fd, direct)
        rand_read = builtin.rand_io(fd, file_bytes, phase_s, write=False)
        rand_write = builtin.rand_io(fd, file_bytes, phase_s, write=True)
    finally:
        os.close(fd)
    return MountResult(
        mount, "builtin", file_bytes, read / 1e6, write / 1e6, rand_read, rand_write, direct, note
    )
