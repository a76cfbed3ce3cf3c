"""The command that starts a GPU container, for the runtime a host has: pure.

What GPU jobs need and people forget, on every runtime that takes it:
- the GPUs: Docker's ``--gpus all`` (the toolkit's hook), CDI ``--device
  nvidia.com/gpu=all`` where a spec names the devices (podman always; Docker where
  daemon.json enables the ``cdi`` feature), apptainer's ``--nv``, enroot's
  ``NVIDIA_VISIBLE_DEVICES``; pyxis takes the GPUs of the Slurm allocation;
- shared memory: ``--ipc=host`` (PyTorch's DataLoader workers and NCCL's shared-memory
  transport outgrow Docker's 64 MB /dev/shm), or a sized ``--shm-size`` (podman refuses
  both at once);
- ``--ulimit memlock=-1 --ulimit stack=67108864`` (NVIDIA's NGC run line: RDMA pins
  memory; 64 MiB stacks). Podman applies limits itself, within this process's hard
  limits unless it holds CAP_SYS_RESOURCE: there a limit above the hard one is capped
  and the plan says so. Any ``--ulimit`` replaces podman's defaults, so nofile and nproc
  are always passed with it;
- the RDMA devices (/dev/infiniband/*, /dev/gdrdrv) with IPC_LOCK, /etc/nccl.conf
  read-only (NCCL reads it at init) or, where the site has none, the NCCL environment
  of this fabric (``dolmen nccl env``; the user's ``--env`` wins), /etc/nccl-topo.xml
  read-only where ``nccl env --write`` left it, and the checkpoint folder with
  DOLMEN_CHECKPOINT_DIR as the jobs backends set it;
- the caller's compile caches (``with_caches``): warm kernels in, new ones kept.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, replace

from dolmen.containers.image_ref import image_problem
from dolmen.containers.site import CACHE_FOLDERS, RUNTIMES, UNLIMITED, Site
from dolmen.errors import UsageError
from dolmen.nccl import NCCL_CONF, TOPO_FILE

CHECKPOINT_MOUNT = "/checkpoints"
MEMLOCK = UNLIMITED
STACK = 67108864  # NGC's run line: --ulimit stack=67108864
NOFILE = 1048576
IMAGE_HINT = "e.g. nvcr.io/nvidia/pytorch:24.05-py3, or an image file: /srv/pytorch.sif"
CDI_REMEDY = "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"
_ENV_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.S)
_GPUS_RE = re.compile(r"all|none|[\w-]+(?:,[\w-]+)*")
_ORDER = ("docker", "podman", "apptainer", "singularity", "enroot")


@dataclass(frozen=True)
class Request:
    """What the user asked to run."""

    image: str
    command: tuple[str, ...] = ()
    runtime: str | None = None  # None: the first of _ORDER installed (pyxis in Slurm)
    gpus: str = "all"  # all | none | a comma list of indices or UUIDs
    shm_size: str | None = None  # a sized /dev/shm instead of the host's IPC namespace
    checkpoint: str | None = None  # host folder mounted at /checkpoints
    mounts: tuple[str, ...] = ()  # SRC:DST[:ro|rw]
    env: tuple[str, ...] = ()  # NAME=VALUE
    network: str | None = None  # docker/podman --network (none, host...)
    name: str | None = None


@dataclass(frozen=True)
class Plan:
    """The argv to run, what it adapted (notes) and what stops it (problems)."""

    runtime: str
    argv: tuple[str, ...]
    gpu_mode: str  # cdi | gpus-flag | nv | env | allocation | none
    notes: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


def _mount(spec: str) -> tuple[str, str, str]:
    parts = spec.split(":")
    if len(parts) == 2:
        parts.append("rw")
    if (
        len(parts) != 3
        or not all(p.startswith("/") for p in parts[:2])
        or parts[2]
        not in (
            "ro",
            "rw",
        )
    ):
        raise UsageError(f"--mount {spec!r} is not SRC:DST[:ro|rw]", hint="e.g. /data:/data:ro")
    return parts[0], parts[1], parts[2]


def validate(req: Request) -> None:
    """UsageError for input the plan cannot use, naming the valid forms."""
    if why := image_problem(req.image):
        raise UsageError(why, hint=IMAGE_HINT)
    if req.runtime is not None and req.runtime not in RUNTIMES:
        raise UsageError(f"unknown runtime {req.runtime!r}", hint=f"valid: {', '.join(RUNTIMES)}")
    if not _GPUS_RE.fullmatch(req.gpus):
        raise UsageError(f"--gpus {req.gpus!r}", hint="all, none, or a list: 0,1 or GPU-<uuid>")
    for m in req.mounts:
        _mount(m)
    for e in req.env:
        if not _ENV_RE.fullmatch(e):
            raise UsageError(f"--env {e!r} is not NAME=VALUE")
    if req.checkpoint is not None and not req.checkpoint.startswith("/"):
        raise UsageError(f"--checkpoint {req.checkpoint!r} must be an absolute path")
    if req.shm_size is not None and not re.fullmatch(r"\d+[bkmgBKMG]?", req.shm_size):
        raise UsageError(f"--shm-size {req.shm_size!r}", hint="e.g. 16g")


def pick_runtime(req: Request, site: Site) -> str:
    """The runtime asked for, else pyxis inside a Slurm allocation, else the first found."""
    if req.runtime is not None:
        return req.runtime
    if site.in_slurm and "pyxis" in site.installed:
        return "pyxis"
    for name in _ORDER:
        if name in site.installed:
            return name
    raise UsageError(
        "no container runtime found on the PATH (docker, podman, apptainer, singularity, enroot)",
        hint="install one (apt-get install podman), or name it with --runtime",
    )


def plan(req: Request, site: Site) -> Plan:
    """The command for ``req`` on ``site`` (``validate(req)`` first)."""
    validate(req)
    runtime = pick_runtime(req, site)
    req, cache_notes = with_caches(req, site)
    if runtime in ("docker", "podman"):
        from dolmen.containers.oci import plan_oci

        got = plan_oci(runtime, req, site)
    else:
        from dolmen.containers.others import plan_other

        got = plan_other(runtime, req, site)
    return replace(got, notes=(*got.notes, *cache_notes))


def mounts(req: Request, site: Site) -> list[tuple[str, str, str]]:
    """Every bind mount of the plan: nccl.conf, the checkpoint folder, the user's."""
    out = [
        (f"/{p}", f"/{p}", "ro")
        for p, on in ((NCCL_CONF, site.nccl_conf), (TOPO_FILE, site.nccl_topo))
        if on
    ]
    if req.checkpoint is not None:
        out.append((req.checkpoint, CHECKPOINT_MOUNT, "rw"))
    out += [_mount(m) for m in req.mounts]
    return out


def env(req: Request, site: Site) -> list[str]:
    """The environment the container gets: DOLMEN_CHECKPOINT_DIR with a checkpoint, the
    fabric's NCCL variables (those the user's --env does not set), the user's."""
    out = [f"DOLMEN_CHECKPOINT_DIR={CHECKPOINT_MOUNT}"] if req.checkpoint is not None else []
    mine = {e.partition("=")[0] for e in req.env}
    out += [f"{k}={v}" for k, v in site.nccl_env.items() if k not in mine]
    return out + list(req.env)


def nccl_notes(site: Site) -> list[str]:
    """What the plan does for NCCL, one line."""
    if site.nccl_conf:
        return ["/etc/nccl.conf mounted read-only"]
    if site.nccl_env:
        return [f"no /etc/nccl.conf: {len(site.nccl_env)} NCCL variables of this fabric passed"]
    return []


def gpu_list(req: Request) -> list[str]:
    """The requested GPUs as a list ([] for all or none)."""
    return [] if req.gpus in ("all", "none") else req.gpus.split(",")


# --- warm compile caches (tune's [caches]): the one hook, kept apart from the rest ---------
CACHE_MOUNT = "/dolmen-cache"


def with_caches(req: Request, site: Site) -> tuple[Request, tuple[str, ...]]:
    """``req`` with the caller's compile caches (``Site.caches``) mounted read-write under
    /dolmen-cache and their variables pointed there, so a container starts warm and leaves
    what it compiles for the next one; and the note that says so. One mount of the folder
    that holds them all when they have tune's layout (``<root>/<uid>/{cuda,triton,...}``:
    the tools make their subfolders), else one mount per folder. A variable the user sets
    with --env, or a mount of their own at /dolmen-cache, wins."""
    mine = {e.split("=", 1)[0] for e in req.env}
    if any(_mount(m)[1] == CACHE_MOUNT for m in req.mounts):
        return req, ()
    folders = [(v, p) for v, p in site.caches if v in CACHE_FOLDERS and v not in mine]
    if not folders:
        return req, ()
    parents = {posixpath.dirname(p) for _, p in folders}
    layout = all(posixpath.basename(p) == CACHE_FOLDERS[v] for v, p in folders)
    if len(parents) == 1 and layout:
        mounts = [f"{parents.pop()}:{CACHE_MOUNT}:rw"]
    else:
        mounts = [f"{p}:{CACHE_MOUNT}/{CACHE_FOLDERS[v]}:rw" for v, p in folders]
    env = [f"{v}={CACHE_MOUNT}/{CACHE_FOLDERS[v]}" for v, _ in folders]
    env += [f"{v}={x}" for v, x in site.caches if v not in CACHE_FOLDERS and v not in mine]
    note = f"compile caches mounted at {CACHE_MOUNT}: {', '.join(v for v, _ in folders)}"
    return replace(req, mounts=(*req.mounts, *mounts), env=(*req.env, *env)), (note,)
