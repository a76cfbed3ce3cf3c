"""The rank environment: one pure function every backend uses (torchrun's names + dolmen's).

torchrun/torchelastic set RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
GROUP_RANK (the node's rank), MASTER_ADDR and MASTER_PORT; PyTorch's
``init_process_group("env://")`` reads them. dolmen adds CUDA_VISIBLE_DEVICES
(the GPUs given to that rank), DOLMEN_CHECKPOINT_DIR, DOLMEN_RESTART_COUNT and
DOLMEN_JOB_ID. Values may be placeholders a scheduler expands
(``$(JOB_COMPLETION_INDEX)`` on Kubernetes).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from dolmen.errors import InputError

# What every rank gets; docs/jobs.md lists them with their meaning.
NAMES = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "GROUP_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "CUDA_VISIBLE_DEVICES",
    "DOLMEN_CHECKPOINT_DIR",
    "DOLMEN_RESTART_COUNT",
    "DOLMEN_JOB_ID",
)

Value = int | str  # a number, or a placeholder the scheduler expands


def rank_env(
    *,
    job_id: str,
    rank: Value,
    local_rank: Value,
    node_rank: Value,
    world_size: int,
    local_world_size: int,
    num_nodes: int,
    master_addr: str,
    master_port: Value,
    restart_count: Value = 0,
    checkpoint_dir: str | None = None,
    gpus: Sequence[int] | None = None,
) -> dict[str, str]:
    """The environment of one rank.

    ``gpus``: the GPU indices (NVML / nvidia-smi order) this rank may use; ``()``
    for a CPU rank, which then sees no GPU at all; None leaves CUDA_VISIBLE_DEVICES
    to the scheduler (Slurm's GRES, the Kubernetes device plugin).
    """
    env = {
        "RANK": str(rank),
        "LOCAL_RANK": str(local_rank),
        "WORLD_SIZE": str(world_size),
        "LOCAL_WORLD_SIZE": str(local_world_size),
        "GROUP_RANK": str(node_rank),
        "GROUP_WORLD_SIZE": str(num_nodes),
        "MASTER_ADDR": master_addr,
        "MASTER_PORT": str(master_port),
        "DOLMEN_RESTART_COUNT": str(restart_count),
        "DOLMEN_JOB_ID": job_id,
    }
    if checkpoint_dir:
        env["DOLMEN_CHECKPOINT_DIR"] = checkpoint_dir
    if gpus is not None:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in gpus)
        # CUDA numbers devices fastest-first unless told otherwise; NVML and nvidia-smi
        # number them by PCI bus. Pin CUDA to bus order so the indices mean the same GPUs.
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    return env


def split_gpus(gpus: Sequence[int], ranks: int) -> list[tuple[int, ...]]:
    """The GPUs of each of a node's ``ranks``: an even share each, or shared round-robin
    when there are more ranks than GPUs; ``()`` each without GPUs."""
    if not gpus:
        return [() for _ in range(ranks)]
    if len(gpus) >= ranks:
        per = len(gpus) // ranks
        return [tuple(gpus[i * per : (i + 1) * per]) for i in range(ranks)]
    return [(gpus[i % len(gpus)],) for i in range(ranks)]


def slurm_rank_env(environ: Mapping[str, str], master_addr: str) -> dict[str, str]:
    """The rank environment of a Slurm task, from the SLURM_* variables srun sets.

    MASTER_ADDR is the first host of SLURM_JOB_NODELIST (the caller expands it with
    ``scontrol show hostnames``); MASTER_PORT is DOLMEN_MASTER_PORT (dolmen's batch
    script sets it, in the network policy's rendezvous range), else the rule's port in
    its default range (``dolmen.net.rendezvous``). InputError names a missing or
    malformed variable.
    """
    from dolmen.net.rendezvous import rendezvous_port

    def num(name: str, default: str | None = None) -> int:
        text = environ.get(name, default)
        if text is None or not text.strip().isdigit():
            raise InputError(
                f"{name} is {'missing' if text is None else repr(text)}",
                hint="run this inside a Slurm job step (srun), which sets the SLURM_* variables",
            )
        return int(text)

    job_id = environ.get("SLURM_JOB_ID") or environ.get("SLURM_JOBID") or ""
    node_id = num("SLURM_NODEID")
    restarts = num("SLURM_RESTART_COUNT", "0")
    per_node = tasks_on_node(environ.get("SLURM_TASKS_PER_NODE", ""), node_id)
    if per_node is None:
        per_node = num("SLURM_NTASKS") // max(1, num("SLURM_NNODES", "1"))
    port = environ.get("DOLMEN_MASTER_PORT") or str(rendezvous_port(job_id or "0", restarts))
    return rank_env(
        job_id=job_id,
        rank=num("SLURM_PROCID"),
        local_rank=num("SLURM_LOCALID"),
        node_rank=node_id,
        world_size=num("SLURM_NTASKS"),
        local_world_size=per_node,
        num_nodes=num("SLURM_NNODES", "1"),
        master_addr=master_addr,
        master_port=port,
        restart_count=restarts,
        checkpoint_dir=environ.get("DOLMEN_CHECKPOINT_DIR"),
        gpus=None,  # Slurm's GRES plugin sets CUDA_VISIBLE_DEVICES for the step
    )


_TASKS = re.compile(r"^(\d+)(?:\(x(\d+)\))?$")


def tasks_on_node(text: str, node_id: int) -> int | None:
    """Tasks on node ``node_id`` from SLURM_TASKS_PER_NODE (``2(x3),1``); None if unreadable."""
    counts: list[int] = []
    for part in text.split(","):
        m = _TASKS.match(part.strip())
        if m is None:
            return None
        counts.extend([int(m.group(1))] * int(m.group(2) or 1))
    return counts[node_id] if 0 <= node_id < len(counts) else None


def first_host(nodelist: str) -> str | None:
    """The first host of a node list when it needs no expansion (``n1`` or ``n1,n2``),
    else None: ranges such as ``n[1-3]`` go through ``scontrol show hostnames``."""
    head = nodelist.strip().split(",", 1)[0]
    return head if head and "[" not in nodelist else None
