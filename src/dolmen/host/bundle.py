"""Write what a ``RecordingHost`` saw as a host tree, or a ``.tar.gz`` of one (the snapshot).

Recorded paths are materialised with their links (relative, so the archive
extracts under tarfile's ``data`` filter); secret paths (``dolmen.host.redact``)
are skipped and listed. Whatever could not be captured is listed in
``dolmen-snapshot.json`` with the reason. The facts that drive the recording
are above this layer: ``dolmen.snapshot``.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import tarfile
import tempfile
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from dolmen import __version__
from dolmen.compat import UTC
from dolmen.fsutil import atomic_write
from dolmen.host.command import CommandResult, RunStatus
from dolmen.host.recording import RecordingHost
from dolmen.host.redact import is_secret, safe_environment
from dolmen.host.tree import COMMANDS_DIR, SNAPSHOT_META

FORMAT = "dolmen.snapshot/1"
MAX_FILE_BYTES = 16 << 20


def write_bundle(
    host: RecordingHost, out: Path, *, as_tree: bool, facts: Iterable[str], started: float
) -> dict[str, Any]:
    """Write ``host``'s recording into ``out`` (see ``dolmen.snapshot.capture``); its metadata.

    ``facts`` names the subsystems collected; ``started`` is the ``perf_counter`` at the
    start of the capture. Nothing is left at ``out`` if writing fails.
    """
    name = f"{host.hostname}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"
    parent = out if as_tree else out.parent
    parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".dolmen-snapshot-", dir=parent))
    try:
        tree = work / name
        tree.mkdir()
        not_captured: dict[str, str] = {}
        unreadable: dict[str, str] = {}
        redacted: list[str] = []
        for rel, how in sorted(host.paths.items()):
            if not rel:
                continue
            if is_secret(rel, how):
                redacted.append(rel)
                continue
            why = _materialize(Path("/"), rel, tree, how)
            if why and why.startswith("errno:"):
                unreadable[rel] = why.removeprefix("errno:")
            elif why:
                not_captured[rel] = why
        _write_commands(tree, host.commands, not_captured)
        files = sum(1 for p in tree.rglob("*") if p.is_file() and not p.is_symlink())
        meta: dict[str, Any] = {
            "format": FORMAT,
            "hostname": host.hostname,
            "created": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
            "dolmen_version": __version__,
            "captured": {
                "files": files + 1,  # with the metadata file itself
                "commands": sorted(k for k, r in host.commands.items() if _kept(r)),
                "facts": sorted(facts),
            },
            "not_captured": dict(sorted(not_captured.items())),
            "unreadable": dict(sorted(unreadable.items())),
            "redacted": sorted(redacted),
            "environment": safe_environment(host.environ()),
            "duration_s": round(time.perf_counter() - started, 3),
        }
        (tree / SNAPSHOT_META).write_text(json.dumps(meta, indent=2) + "\n")
        if as_tree:
            final = out / name
            os.replace(tree, final)
            meta["path"] = str(final)
        else:
            tmp_tar = work / "snapshot.tar.gz"
            with tarfile.open(tmp_tar, "w:gz", compresslevel=6) as tar:
                tar.add(tree, arcname=name)
            atomic_write(out, tmp_tar.read_bytes(), mode=0o600)
            meta["path"] = str(out)
        return meta
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _kept(r: CommandResult) -> bool:
    return r.status in (RunStatus.OK, RunStatus.FAILED)


def _write_commands(
    tree: Path, commands: Mapping[str, CommandResult], not_captured: dict[str, str]
) -> None:
    folder = tree / COMMANDS_DIR
    folder.mkdir(exist_ok=True)
    for key, r in sorted(commands.items()):
        if not _kept(r):
            not_captured[key] = r.reason or r.status.value
            continue
        (folder / key).write_text(r.stdout)
        if r.rc:
            (folder / f"{key}.rc").write_text(f"{r.rc}\n")
        if r.stderr:
            (folder / f"{key}.err").write_text(r.stderr)


def _materialize(
    live_root: Path, rel: str, tree: Path, how: str = "read", depth: int = 0
) -> str | None:
    """Copy one path into the tree, recreating every link on the way (relative).

    ``how`` is what was done with the path (see ``_STRENGTH``). Returns None on
    success, else why the path could not be captured.
    """
    if depth > 40:
        return "too many levels of symbolic links"
    parts = [p for p in rel.split("/") if p and p != "."]
    done: list[str] = []
    for i, part in enumerate(parts):
        if part == "..":
            if done:
                done.pop()
            continue
        live = live_root.joinpath(*done, part)
        try:
            st = os.lstat(live)
        except FileNotFoundError:
            return None  # absent on the host: absent in the tree, as the contract says
        except OSError as e:
            return f"unreadable: {e.strerror}"
        dest = tree.joinpath(*done, part)
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(live)
            last = i == len(parts) - 1
            here = "/" + "/".join(done)
            absolute = os.path.normpath(os.path.join(here, target))
            if not dest.is_symlink() and not dest.exists():
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(os.path.relpath(absolute, here), dest)
            if last and how == "link":
                return None
            rest = "/".join(parts[i + 1 :])
            follow = f"{absolute.lstrip('/')}/{rest}".rstrip("/")
            return _materialize(live_root, follow, tree, how, depth + 1)
        done.append(part)
    live = live_root.joinpath(*done)
    dest = tree.joinpath(*done)
    if is_secret("/".join(done), how):
        return "redacted: secret path"
    try:
        st = os.stat(live)
        if stat.S_ISDIR(st.st_mode):
            dest.mkdir(parents=True, exist_ok=True)
            if how == "list":
                _entries(live, dest)
            return None
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file"
        data = _read_limited(live) if how == "read" else b""
    except OSError as e:
        # The live host refused this read (EINVAL on a down link's carrier, EACCES...):
        # the tree host replays the same error, so facts read the same as live.
        return f"errno:{errno.errorcode.get(e.errno or 0, 'EIO')}" if e.errno else "unreadable"
    if data is None:
        return f"larger than {MAX_FILE_BYTES >> 20} MiB"
    if dest.is_dir() and not dest.is_symlink():
        return None
    if how != "read" and dest.exists():
        return None  # never replace captured bytes with a placeholder
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
    os.chmod(dest, stat.S_IMODE(st.st_mode) & 0o755 | 0o600)
    return None


def _read_limited(path: Path) -> bytes | None:
    """The bytes of a file, read in small chunks (procfs refuses huge reads with ENOMEM)."""
    chunks: list[bytes] = []
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 16):
            size += len(chunk)
            if size > MAX_FILE_BYTES:
                return None
            chunks.append(chunk)
    return b"".join(chunks)


def _entries(live: Path, dest: Path) -> None:
    """A listed folder's entries by name and type: links as links, the rest as placeholders."""
    try:
        names = os.listdir(live)
    except OSError:
        return
    for name in names:
        src, out = live / name, dest / name
        if out.exists() or out.is_symlink() or is_secret(str(src).lstrip("/")):
            continue
        try:
            st = os.lstat(src)
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(src)
                if target.startswith("/"):
                    target = os.path.relpath(target, str(live))
                os.symlink(target, out)
            elif stat.S_ISDIR(st.st_mode):
                out.mkdir()
            elif stat.S_ISREG(st.st_mode):
                out.touch(0o600)
        except OSError:
            continue
