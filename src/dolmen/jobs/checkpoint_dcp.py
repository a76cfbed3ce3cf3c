"""torch.distributed.checkpoint (DCP) checkpoints in dolmen's layout (docs/jobs.md).

At LLM scale no rank holds the whole state: with DCP every rank writes its own shards
(``__<rank>_<n>.distcp``) and the coordinator writes ``.metadata`` after every rank's
write has finished; ``.metadata`` is therefore the COMPLETE marker, and a folder without
it is partial. ``save`` writes into ``step-<12 digits>`` of the job's checkpoint folder,
so ``checkpoint.latest`` finds both formats, newest first.

``.metadata`` is a pickle. dolmen reads it without torch and without running anything
it names: every class the pickle asks for is a stand-in that only records its state
(``_Inert``), and only the storage table is kept (file -> end of its last chunk), which
is what ``verify="size"`` compares. DCP keeps no digests; ``save(..., hashes=True)``
makes each rank record the sha256 of its own shards (``.dolmen-sha256-<rank>.json``)
after the save, which ``verify="hash"`` then requires.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dolmen.fsutil import atomic_write
from dolmen.jobs.checkpoint import Checkpoint, file_sha256, prune

FORMAT = "torch.distributed.checkpoint"
METADATA = ".metadata"
DIGESTS = re.compile(r"^\.dolmen-sha256-(\d+)\.json$")
MAX_METADATA = 1 << 30  # a million tensors' entries are a few hundred MB


def step_dir(directory: str | Path, step: int) -> Path:
    """The folder DCP writes step ``step`` into."""
    if step < 0:
        raise ValueError(f"step must be 0 or more, not {step}")
    return Path(directory) / f"step-{step:012d}"


def save(
    directory: str | Path,
    step: int,
    state_dict: Mapping[str, Any],
    *,
    hashes: bool = False,
    keep: int | None = None,
    **writer_options: Any,
) -> Path:
    """Every rank calls this, as it would ``dcp.save``; returns the step's folder.

    A rerun of the same step first loses its old ``.metadata`` (rank 0, then a barrier),
    so a half-rewritten folder never looks complete. ``writer_options`` go to
    ``FileSystemWriter`` (``single_file_per_rank=False``: one file per tensor).
    """
    import torch.distributed as dist
    from torch.distributed.checkpoint.filesystem import FileSystemWriter
    from torch.distributed.checkpoint.state_dict_saver import save as dcp_save

    path = step_dir(directory, step)
    rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
    if rank == 0:
        path.mkdir(parents=True, exist_ok=True)
        for name in os.listdir(path):
            if name == METADATA or DIGESTS.match(name):
                (path / name).unlink()
    _barrier()
    dcp_save(dict(state_dict), storage_writer=FileSystemWriter(str(path), **writer_options))
    if hashes:
        mine = {
            n: file_sha256(path / n) for n in sorted(os.listdir(path)) if n.startswith(f"__{rank}_")
        }
        atomic_write(path / f".dolmen-sha256-{rank}.json", json.dumps(mine, indent=1).encode())
        _barrier()
    if keep is not None and rank == 0:
        prune(directory, keep)
    return path


def load(ckpt: Checkpoint, state_dict: dict[str, Any]) -> None:
    """Load ``ckpt`` into ``state_dict`` in place (every rank calls it, as ``dcp.load``)."""
    from torch.distributed.checkpoint.filesystem import FileSystemReader
    from torch.distributed.checkpoint.state_dict_loader import load as dcp_load

    dcp_load(state_dict, storage_reader=FileSystemReader(str(ckpt.path)))


def read_dcp(path: Path, step: int) -> Checkpoint | None:
    """The DCP checkpoint in ``path``, or None without a readable ``.metadata``."""
    try:
        fd = os.open(path / METADATA, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_METADATA:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            raw = f.read(MAX_METADATA + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    sizes = parse_metadata(raw)
    if sizes is None:
        return None
    digests = _digests(path)
    files = {n: digests.get(n, "") for n in sizes}
    return Checkpoint(path, step, files, sizes, FORMAT)


def parse_metadata(raw: bytes) -> dict[str, int] | None:
    """Shard file -> the end of its last chunk, from the bytes of a ``.metadata``; None
    for anything that is not a DCP metadata pickle (junk, cut off, another object)."""
    try:
        meta = _Reader(io.BytesIO(raw)).load()
        table = meta.state["storage_data"]
        sizes: dict[str, int] = {}
        for info in table.values():
            s = info.state
            name, end = s["relative_path"], int(s["offset"]) + int(s["length"])
            if not isinstance(name, str) or "/" in name or name.startswith(".") or end < 0:
                return None
            sizes[name] = max(end, sizes.get(name, 0))
        return sizes or None
    except Exception:  # any malformed pickle is "not a checkpoint", whatever it raised
        return None


class _Inert:
    """Whatever class the pickle names: holds its arguments and state, runs nothing."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args

    def __setstate__(self, state: Any) -> None:
        self.state = state


class _Reader(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> type:
        return type(name, (_Inert,), {})


def _digests(path: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for name in os.listdir(path):
        if DIGESTS.match(name):
            try:
                data = json.loads((path / name).read_text())
                found.update({str(k): str(v) for k, v in data.items()})
            except (OSError, ValueError, AttributeError):
                continue
    return found


def _barrier() -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
