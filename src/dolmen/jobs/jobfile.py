"""The TOML job file (``dolmen jobs submit --file job.toml``), documented in docs/jobs.md::

    name = "llama-ft"
    command = ["python", "train.py", "--epochs", "3"]
    backend = "slurm"            # local | slurm | kubernetes (default: [jobs] backend)
    nodes = 2
    gpus_per_node = 8
    procs_per_node = 8           # default: one per GPU (1 for a CPU job)
    image = "nvcr.io/nvidia/pytorch:24.05-py3"
    checkpoint_dir = "/shared/ckpt/llama-ft"
    max_restarts = 3
    time_limit = "12h"           # 30m, 2h, 1:30:00, 2-00:00:00
    account = "research"
    partition = "gpu"
    workdir = "/shared/src"
    elastic = false              # restart on fewer nodes when hardware is short
    min_nodes = 1
    exclude_nodes = ["gpu-07"]

    [env]
    NCCL_DEBUG = "WARN"

An unknown key or a value of the wrong type is refused with the file, the line and
the valid keys (ConfigError, exit 2).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dolmen.config import check_keys, line_of, parse_toml
from dolmen.errors import ConfigError, UsageError
from dolmen.jobs.spec import JobSpec
from dolmen.values.duration import parse_time_limit as parse_duration

# key -> accepted type(s)
KEYS: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "command": list,
    "backend": str,
    "nodes": int,
    "gpus_per_node": int,
    "procs_per_node": int,
    "image": str,
    "checkpoint_dir": str,
    "max_restarts": int,
    "time_limit": (str, int),
    "account": str,
    "partition": str,
    "workdir": str,
    "elastic": bool,
    "min_nodes": int,
    "exclude_nodes": list,
    "env": dict,
}


@dataclass(frozen=True)
class JobFile:
    """A parsed job file: the fields it sets (JobSpec names) and the backend it asks for."""

    fields: Mapping[str, Any]
    backend: str | None


# A job file is a few lines of TOML; a bigger one is a mistake (``--file /dev/zero``
# once filled the machine's memory: issue 9 case 9).
MAX_BYTES = 1 << 20


def load_jobfile(path: str | Path) -> JobFile:
    """Read and check a job file (module docstring): a regular file of at most
    ``MAX_BYTES``, else ConfigError before a byte is read (a FIFO would block, a device
    never end)."""
    return parse_jobfile(read_jobfile(Path(path)), str(path))


def read_jobfile(path: Path) -> str:
    """The text of a job file, regular-only and size-capped (``load_jobfile``)."""
    import os
    import stat

    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer before we can refuse it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError as e:
        raise ConfigError("no such job file", path=str(path)) from e
    except OSError as e:
        raise ConfigError(f"cannot read the job file: {e.strerror or e}", path=str(path)) from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError("not a regular file: a job file must be a TOML file", path=str(path))
        if st.st_size > MAX_BYTES:
            raise ConfigError(
                f"the job file is {st.st_size} bytes, above the limit of {MAX_BYTES}",
                path=str(path),
            )
        data = os.read(fd, MAX_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"cannot read the job file: {e.strerror or e}", path=str(path)) from e
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise ConfigError(f"the job file is above the limit of {MAX_BYTES} bytes", path=str(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"cannot read the job file: not UTF-8 text ({e})", path=str(path)) from e


def parse_jobfile(text: str, path: str = "<job file>") -> JobFile:
    """Parse the text of a job file; ConfigError with file and line on any mistake."""
    data = parse_toml(text, path)
    check_keys(data, KEYS, text=text, path=path)
    fields: dict[str, Any] = {}
    for key, value in data.items():
        line = line_of(text, key)
        if key in ("command", "exclude_nodes") and not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{key} must be a list of strings", path=path, line=line)
        if key == "env" and not all(isinstance(v, str) for v in value.values()):
            raise ConfigError("[env] values must be strings", path=path, line=line)
        fields[key] = value
    backend = fields.pop("backend", None)
    if "time_limit" in fields:
        raw = fields.pop("time_limit")
        try:
            fields["time_limit_s"] = parse_duration(str(raw))
        except UsageError as e:
            raise ConfigError(e.message, path=path, line=line_of(text, "time_limit")) from None
    for key in ("command", "exclude_nodes"):
        if key in fields:
            fields[key] = tuple(fields[key])
    return JobFile(fields, backend)


def merge(base: JobFile | None, overrides: Mapping[str, Any]) -> JobSpec:
    """A JobSpec from a job file's fields, with command-line ``overrides`` (non-None) on top."""
    values: dict[str, Any] = dict(base.fields) if base else {}
    values.update({k: v for k, v in overrides.items() if v is not None})
    if not values.get("command") and not values.get("image"):
        raise UsageError("no command given", hint="put it after `--`, or `command = [...]`")
    if not values.get("name"):
        first = values.get("command") or (values.get("image") or "job",)
        name = re.sub(r"[^A-Za-z0-9_.-]", "-", Path(first[0]).name).strip("-._")
        values["name"] = name[:63] or "job"
    return JobSpec(**values)
