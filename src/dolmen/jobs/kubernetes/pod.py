"""The pod template every node of a job runs, JobSet or Indexed Job alike (pure).

One pod per node. Its container starts the node's ranks with torchrun from the image's
own Python (``python -m torch.distributed.run``): stock NGC images have torch, not dolmen.
torchrun gets the node's rank from the Job's completion index and MASTER_ADDR from the
workload (``manifests``, ``jobset``) through the downward API, so nothing in the pod
needs to know the name the API server generates.

Beside the GPUs the pod asks for what a NCCL job needs (kubernetes/options.py): /dev/shm
as a memory emptyDir of ``shm_size``, the RDMA/hostdev resources and Multus networks of
the fabric, IPC_LOCK (verbs pin memory), the GPU taint tolerated, GPU-feature-discovery
labels selected, and CPU and memory requests, so that the pod is Burstable, not
BestEffort (the first evicted under memory pressure).
"""

from __future__ import annotations

import re
from typing import Any

from dolmen.jobs.spec import JobSpec

GPU = "nvidia.com/gpu"
PORT = 29500
CONTAINER = "trainer"
LABEL = "dolmen.io/job"
MANAGED = {"app.kubernetes.io/managed-by": "dolmen"}
NETWORKS = "k8s.v1.cni.cncf.io/networks"  # Multus
VOLCANO_GROUP = "scheduling.k8s.io/group-name"
GPU_PRODUCT = "nvidia.com/gpu.product"  # GPU feature discovery's label
# The NVIDIA GPU operator's and the cloud GPU node pools' usual taint.
GPU_TOLERATION = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
DEFAULT_SHM = "16Gi"
# Inside the container, not this machine's: no Host reads it (the conformance rule on
# machine paths in string literals is about this machine).
SHM_MOUNT = "/".join(("", "dev", "shm"))
DEFAULT_CPUS_PER_RANK = 1
DEFAULT_MEM_PER_RANK_GI = 4
COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
_PYTHON = re.compile(r"^python[0-9.]*$")
_SLURM_UNITS = {"K": "Ki", "M": "Mi", "G": "Gi", "T": "Ti", "": "Mi"}  # a bare number is MB


def torchrun(spec: JobSpec, python: str) -> list[str]:
    """The container's command: torchrun with this node's share of the job, then the
    program (``python train.py`` runs as torchrun's script, anything else with
    ``--no-python``). torchrun restarts nothing: the workload restarts the whole group."""
    argv = [
        python,
        "-m",
        "torch.distributed.run",
        f"--nnodes={spec.nodes}",
        f"--nproc-per-node={spec.ranks_per_node}",
        "--node-rank=$(GROUP_RANK)",
        "--master-addr=$(MASTER_ADDR)",
        f"--master-port={PORT}",
        "--max-restarts=0",
    ]
    cmd = list(spec.command)
    if cmd and _PYTHON.match(cmd[0].rsplit("/", 1)[-1]) and cmd[1:2] != ["-c"] and cmd[1:]:
        return [*argv, *cmd[1:]]
    return [*argv, "--no-python", *cmd]


def memory_quantity(slurm_mem: str) -> str:
    """Slurm's ``--mem`` (``500G``; a bare number is MB, powers of 1024) as a quantity."""
    digits = slurm_mem.rstrip("KMGT")
    return f"{digits}{_SLURM_UNITS[slurm_mem[len(digits) :]]}"


def resources(spec: JobSpec) -> dict[str, Any]:
    """Requests (CPU, memory, GPUs, fabric devices) and limits (the devices, which
    Kubernetes wants equal to their requests)."""
    ranks = spec.ranks_per_node
    cpus = (spec.cpus_per_task or DEFAULT_CPUS_PER_RANK) * ranks
    mem = memory_quantity(spec.mem) if spec.mem else f"{DEFAULT_MEM_PER_RANK_GI * ranks}Gi"
    devices: dict[str, Any] = {GPU: spec.gpus_per_node} if spec.gpus_per_node else {}
    devices.update(sorted(spec.kubernetes.resources.items()))
    return {"requests": {"cpu": str(cpus), "memory": mem, **devices}, "limits": dict(devices)}


def pod_template(
    spec: JobSpec,
    *,
    name: str,
    env: list[dict[str, Any]],
    python: str,
    checkpoint_claim: str,
    group: str | None = None,
    subdomain: str | None = None,
) -> dict[str, Any]:
    """The PodTemplateSpec of one node; ``env`` comes first (the rank and MASTER_ADDR
    variables the workload defines), then the job's own."""
    opts = spec.kubernetes
    env = [*env, *({"name": k, "value": v} for k, v in sorted(spec.env.items()))]
    if spec.checkpoint_dir:
        env.append({"name": "DOLMEN_CHECKPOINT_DIR", "value": spec.checkpoint_dir})
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": spec.image or "",
        "command": torchrun(spec, python),
        "env": env,
        "resources": resources(spec),
        "ports": [{"name": "rendezvous", "containerPort": PORT}],
        "volumeMounts": [{"name": "dshm", "mountPath": SHM_MOUNT}],
    }
    if spec.workdir:
        container["workingDir"] = spec.workdir
    ipc_lock = opts.ipc_lock if opts.ipc_lock is not None else bool(opts.resources or opts.networks)
    if ipc_lock:
        container["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    volumes: list[dict[str, Any]] = [
        {
            "name": "dshm",
            "emptyDir": {"medium": "Memory", "sizeLimit": opts.shm_size or DEFAULT_SHM},
        }
    ]
    if spec.checkpoint_dir:
        container["volumeMounts"].append({"name": "checkpoints", "mountPath": spec.checkpoint_dir})
        volumes.append(
            {"name": "checkpoints", "persistentVolumeClaim": {"claimName": checkpoint_claim}}
        )
    pod: dict[str, Any] = {"restartPolicy": "Never", "containers": [container], "volumes": volumes}
    if subdomain:
        pod["subdomain"] = subdomain
    tolerations = [GPU_TOLERATION] if spec.gpus_per_node else []
    tolerations += [dict(t) for t in opts.tolerations if dict(t) not in tolerations]
    if tolerations:
        pod["tolerations"] = tolerations
    selector = dict(sorted(opts.node_selector.items()))
    if opts.gpu_product:
        selector[GPU_PRODUCT] = opts.gpu_product
    if selector:
        pod["nodeSelector"] = selector
    annotations: dict[str, str] = {}
    if opts.networks:
        annotations[NETWORKS] = ",".join(opts.networks)
    if opts.gang == "volcano":
        pod["schedulerName"] = "volcano"
        annotations[VOLCANO_GROUP] = group or name
    metadata: dict[str, Any] = {"labels": {**MANAGED, LABEL: name}}
    if annotations:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": pod}
