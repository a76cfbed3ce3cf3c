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
    qos = "high"                 # Slurm: --qos, --constraint, --mem (per node), ...
    constraint = "ib&h100"
    mem = "500G"                 # also the pod's memory request on Kubernetes
    cpus_per_task = 12           # also the pod's CPU request (x ranks per node)
    exclusive = true
    reservation = "maint-window"
    scratch = "encrypted"        # local: checkpoint_dir on fscrypt, shredded at the end

    [env]
    NCCL_DEBUG = "WARN"

    [slurm]
    extra = ["--mail-type=END"]  # more sbatch options, one per item (slurm/extra.py)

    [kubernetes]                 # pods of a NCCL job (kubernetes/options.py)
    shm_size = "64Gi"
    resources = { "rdma/rdma_shared_device_a" = 1 }
    networks = ["sriov-ib0"]
    gpu_product = "NVIDIA-H100-80GB-HBM3"
    tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
    node_selector = { "topology.kubernetes.io/zone" = "a" }
    gang = "kueue"               # kueue | volcano
    queue = "team-a"
    ttl = "1d"
    workload = "jobset"          # jobset | job

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
from dolmen.fsutil import not_utf8
from dolmen.jobs.kubernetes.options import PodOptions
from dolmen.jobs.slurm.extra import check_extra
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
    "qos": str,
    "constraint": str,
    "mem": (str, int),
    "cpus_per_task": int,
    "exclusive": bool,
    "reservation": str,
    "slurm": dict,
    "kubernetes": dict,
    "scratch": str,  # "encrypted": docs/crypt.md
}
SLURM_KEYS: dict[str, type | tuple[type, ...]] = {"extra": list}
KUBERNETES_KEYS: dict[str, type | tuple[type, ...]] = {
    "shm_size": str,
    "resources": dict,
    "networks": list,
    "ipc_lock": bool,
    "tolerations": list,
    "node_selector": dict,
    "gpu_product": str,
    "gang": str,
    "queue": str,
    "ttl": (str, int),
    "workload": str,
}
# What starts a program rather than being it: a job is named for the script it runs.
INTERPRETERS = re.compile(r"^(python[0-9.]*|pypy[0-9.]*|torchrun|bash|sh|env|uv|accelerate)$")


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
        raise ConfigError(
            f"cannot read the job file: {not_utf8(e)}",
            path=str(path),
            hint="save the job file as UTF-8 text (iconv -t UTF-8)",
        ) from e


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
    if "mem" in fields:
        fields["mem"] = str(fields["mem"])
    if "slurm" in fields:
        fields["slurm_extra"] = _slurm_table(fields.pop("slurm"), text, path)
    if "kubernetes" in fields:
        fields["kubernetes"] = _kubernetes_table(fields.pop("kubernetes"), text, path)
    return JobFile(fields, backend)


def _slurm_table(table: dict[str, Any], text: str, path: str) -> tuple[str, ...]:
    check_keys(table, SLURM_KEYS, text=text, path=path, section="slurm")
    extra = table.get("extra", [])
    try:
        check_extra(extra, "[slurm] extra")
    except UsageError as e:
        raise ConfigError(e.message, path=path, line=line_of(text, "extra")) from None
    return tuple(extra)


def _kubernetes_table(table: dict[str, Any], text: str, path: str) -> PodOptions:
    check_keys(table, KUBERNETES_KEYS, text=text, path=path, section="kubernetes")
    values = dict(table)
    try:
        if "ttl" in values:
            values["ttl_s"] = parse_duration(str(values.pop("ttl")))
        for key in ("networks", "tolerations"):
            if key in values:
                values[key] = tuple(values[key])
        if not all(isinstance(t, dict) for t in values.get("tolerations", ())):
            raise UsageError("[kubernetes] tolerations must be tables: [{ key = ... }]")
        options = PodOptions(**values)
        options.check()
    except UsageError as e:
        first = next(iter(table), "kubernetes")
        raise ConfigError(e.message, path=path, line=line_of(text, first)) from None
    return options


def _program(arg: str) -> bool:
    """True for what reads as the program, not an option's value (``--standalone train.py``)."""
    return arg.startswith("-") or arg.endswith((".py", ".sh")) or "/" in arg


def job_name(command: tuple[str, ...]) -> str:
    """The name of the program ``command`` runs: the script after an interpreter and its
    options (``python -u train.py`` -> ``train.py``, ``python -m pkg.train`` ->
    ``pkg.train``, ``torchrun --nproc-per-node 8 train.py`` -> ``train.py``)."""
    args = list(command)
    while args and INTERPRETERS.match(Path(args[0]).name):
        interpreter = args.pop(0)
        while args and args[0].startswith("-"):
            opt = args.pop(0)
            if opt == "-m" and args:
                return args[0]
            if opt == "-c":
                return Path(interpreter).name
            if "=" not in opt and opt.startswith("--") and args and not _program(args[0]):
                args.pop(0)  # torchrun --nnodes 2: the option's value
        if not args:
            return Path(interpreter).name
    return Path(args[0]).name if args else "job"


def merge(base: JobFile | None, overrides: Mapping[str, Any]) -> JobSpec:
    """A JobSpec from a job file's fields, with command-line ``overrides`` (non-None) on top."""
    values: dict[str, Any] = dict(base.fields) if base else {}
    values.update({k: v for k, v in overrides.items() if v is not None})
    if not values.get("command") and not values.get("image"):
        raise UsageError("no command given", hint="put it after `--`, or `command = [...]`")
    if not values.get("name"):
        first = job_name(tuple(values.get("command") or ())) if values.get("command") else ""
        first = first or Path(values.get("image") or "job").name
        name = re.sub(r"[^A-Za-z0-9_.-]", "-", first).strip("-._")
        values["name"] = name[:63] or "job"
    return JobSpec(**values)
