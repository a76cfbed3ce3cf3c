"""Checkpoints any framework can write and find again after a crash (docs/jobs.md).

On disk, in the job's checkpoint folder (``$DOLMEN_CHECKPOINT_DIR``)::

    step-000000000120/           one checkpoint: the training step, 12 digits
        state                    payload file(s), any names, any format
        COMPLETE                 written last: JSON manifest {format, step, created,
                                 files: {name: {size, sha256}}}
    .partial-000000000130-<pid>-<n>/   being written (or left by a crash): ignored

Saving writes the payload into a ``.partial-*`` folder, fsyncs every file,
renames the folder to ``step-<step>``, writes ``COMPLETE`` atomically (temporary
name, fsync, rename) and fsyncs the folders. A checkpoint without a readable
``COMPLETE`` whose files match it is partial: ``latest`` skips it.

A ``step-<step>`` folder written by torch.distributed.checkpoint (every rank its own
shard, ``.metadata`` written last by the coordinator) is found the same way, with
``.metadata`` as its COMPLETE (``checkpoint_dcp``).

What "match" means is ``verify``: ``"size"`` (the default) compares each file's size
with the manifest's, a stat per file; ``"hash"`` re-reads every byte and compares
sha256 digests, which at LLM scale (hundreds of GB over 50+ shards) turns every restart
into minutes of reading: bench/checkpoint_lookup.py measures both. A torn or truncated
write changes the size; same-size corruption needs ``"hash"``. ``"none"`` trusts the marker.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from dolmen.fsutil import atomic_write, fsync_dir
from dolmen.host.process import pid_alive

FORMAT = "dolmen.checkpoint/1"
MARKER = "COMPLETE"
_STEP = re.compile(r"^step-(\d{12})$")
_counter = itertools.count()

Verify = Literal["none", "size", "hash"]
VERIFY = ("none", "size", "hash")
# A payload: bytes, or a function that writes the file at the path it is given
# (``lambda p: torch.save(state, p)``).
Payload = bytes | Callable[[Path], object]


@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint: its folder, step and files (name -> sha256, "" when the
    format keeps no digest), their sizes and the format (``FORMAT`` or
    ``checkpoint_dcp.FORMAT``)."""

    path: Path
    step: int
    files: Mapping[str, str]
    sizes: Mapping[str, int] = field(default_factory=dict, compare=False)
    format: str = FORMAT

    def file(self, name: str = "state") -> Path:
        """The path of one payload file."""
        if name not in self.files:
            raise KeyError(f"{name!r} is not in {self.path}; files: {', '.join(self.files)}")
        return self.path / name

    def read(self, name: str = "state") -> bytes:
        """The bytes of one payload file."""
        return self.file(name).read_bytes()


def save(
    directory: str | Path,
    step: int,
    data: Payload | Mapping[str, Payload],
    *,
    keep: int | None = None,
) -> Checkpoint:
    """Save a checkpoint atomically (module docstring) and return it.

    ``data``: bytes or a writer for a single file named ``state``, or a mapping of
    file names to either. ``keep``: afterwards, delete all but the newest ``keep``
    complete checkpoints (and partial ones older than the newest).
    """
    if step < 0:
        raise ValueError(f"step must be 0 or more, not {step}")
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    payloads = dict(data) if isinstance(data, Mapping) else {"state": data}
    for name in payloads:
        if not name or "/" in name or name == MARKER or name.startswith("."):
            raise ValueError(f"checkpoint file name {name!r} is not allowed")
    tmp = root / f".partial-{step:012d}-{os.getpid()}-{next(_counter)}"
    tmp.mkdir()
    files: dict[str, dict[str, object]] = {}
    for name, payload in payloads.items():
        path = tmp / name
        if isinstance(payload, bytes):
            path.write_bytes(payload)
        else:
            payload(path)
        if not path.is_file():
            raise ValueError(f"the writer for {name!r} did not create {path}")
        _fsync_file(path)
        files[name] = {"size": path.stat().st_size, "sha256": file_sha256(path)}
    fsync_dir(tmp)
    final = root / f"step-{step:012d}"
    if final.exists():  # a rerun of the same step after a restart replaces the old one
        shutil.rmtree(final)
    os.replace(tmp, final)
    fsync_dir(root)
    manifest = {"format": FORMAT, "step": step, "created": time.time(), "files": files}
    atomic_write(final / MARKER, json.dumps(manifest, indent=1).encode())
    fsync_dir(root)
    ckpt = Checkpoint(
        final,
        step,
        {n: str(f["sha256"]) for n, f in files.items()},
        {n: int(str(f["size"])) for n, f in files.items()},
    )
    if keep is not None:
        prune(root, keep)
    return ckpt


def latest(directory: str | Path, *, verify: Verify | bool = "size") -> Checkpoint | None:
    """The newest complete checkpoint that passes ``verify`` (module docstring), or None;
    one that does not is skipped, not trusted. ``True`` is ``"hash"``, ``False`` ``"none"``."""
    mode = _mode(verify)
    for ckpt in complete(directory, verify="none"):
        if verified(ckpt, mode):
            return ckpt
    return None


def complete(directory: str | Path, *, verify: Verify | bool = "none") -> list[Checkpoint]:
    """Complete checkpoints (both formats), newest first; with ``verify``, those that pass."""
    from dolmen.jobs.checkpoint_dcp import read_dcp

    mode = _mode(verify)
    root = Path(directory)
    try:
        names = os.listdir(root)
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for name in names:
        m = _STEP.match(name)
        if m is None:
            continue
        step = int(m.group(1))
        ckpt = _read_manifest(root / name, step) or read_dcp(root / name, step)
        if ckpt is not None and verified(ckpt, mode):
            found.append(ckpt)
    return sorted(found, key=lambda c: c.step, reverse=True)


def prune(directory: str | Path, keep: int) -> None:
    """Delete all but the newest ``keep`` complete checkpoints, and leftovers of crashed
    saves; a save in progress by a live process (its pid in the name) is left alone."""
    root = Path(directory)
    kept = complete(root)[: max(keep, 1)]
    keep_names = {c.path.name for c in kept}
    for entry in root.iterdir():
        stale_step = _STEP.match(entry.name) and entry.name not in keep_names
        crashed = entry.name.startswith(".partial-") and not _writer_alive(entry.name)
        if stale_step or crashed:
            shutil.rmtree(entry, ignore_errors=True)


def _read_manifest(path: Path, step: int) -> Checkpoint | None:
    try:
        manifest = json.loads((path / MARKER).read_text())
        files = manifest["files"]
        if manifest.get("format") != FORMAT or manifest.get("step") != step:
            return None
        digests = {str(n): str(f["sha256"]) for n, f in files.items()}
        sizes = {str(n): int(f["size"]) for n, f in files.items()}
        return Checkpoint(path, step, digests, sizes)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def verified(ckpt: Checkpoint, verify: Verify | bool = "size") -> bool:
    """Whether ``ckpt``'s files are what its marker says (module docstring). A DCP
    shard's size is at least the end of its last chunk; under ``"hash"`` a file without a
    recorded digest is not verified."""
    mode = _mode(verify)
    try:
        if mode == "none":
            return True
        if mode == "size":
            exact = ckpt.format == FORMAT
            for name, size in ckpt.sizes.items():
                st = os.stat(ckpt.path / name)
                if st.st_size != size if exact else st.st_size < size:
                    return False
            return True
        return all(
            digest and file_sha256(ckpt.path / n) == digest for n, digest in ckpt.files.items()
        )
    except OSError:
        return False


def _mode(verify: Verify | bool) -> Verify:
    if verify is True:
        return "hash"
    if verify is False:
        return "none"
    if verify not in VERIFY:
        raise ValueError(f"verify must be one of {', '.join(VERIFY)}, not {verify!r}")
    return verify


def _writer_alive(name: str) -> bool:
    parts = name.split("-")
    if len(parts) < 4 or not parts[2].isdigit():
        return False
    pid = int(parts[2])
    return pid == os.getpid() or pid_alive(pid)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
