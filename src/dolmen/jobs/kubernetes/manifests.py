"""Kubernetes manifests of a job, pure functions of the spec (what ``plan`` prints).

- a headless Service named like the job, so that rank 0's pod answers at
  ``<job>-0.<job>`` (an Indexed Job's pods are named ``<job>-<index>`` and
  ``subdomain`` puts them under the Service): MASTER_ADDR;
- an Indexed Job: one pod per node (completions = parallelism = nodes), each
  with ``nvidia.com/gpu`` limits, the rank environment (GROUP_RANK from the pod's
  completion index), restartPolicy Never and a podFailurePolicy: pods evicted or
  preempted (DisruptionTarget) are recreated without counting, a configuration
  error (exit 2 from dolmen's launcher, 126 not executable, 127 not found) fails
  the job at once, any other failure counts against the retry limits;
- a ResourceQuota per namespace for GPU quotas (``requests.nvidia.com/gpu``).

Schemas checked by the tests with kubernetes-validate against ``KUBE_VERSION``.
"""

from __future__ import annotations

import re
from typing import Any

from dolmen.jobs.env import rank_env
from dolmen.jobs.spec import JobSpec

KUBE_VERSION = "1.30.0"  # backoffLimitPerIndex and podFailurePolicy are beta there, on by default
GPU = "nvidia.com/gpu"
PORT = 29500
CONTAINER = "trainer"
CONFIG_ERROR_CODES = (2, 126, 127)  # dolmen's bad input; not executable; not found
QUOTA_NAME = "dolmen-gpu-quota"
_COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
_FAILURE_COUNT = "metadata.annotations['batch.kubernetes.io/job-index-failure-count']"
LABEL = "dolmen.io/job"
MANAGED = {"app.kubernetes.io/managed-by": "dolmen"}


def dns_name(name: str) -> str:
    """A DNS-1123 label from a job name (lowercase, '-', at most 52 characters so that
    ``<job>-<index>`` pod names and their hostnames stay under 63)."""
    label = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:52].strip("-")
    return label or "job"


def job_manifests(
    spec: JobSpec,
    *,
    namespace: str,
    python: str = "python3",
    checkpoint_claim: str = "dolmen-checkpoints",
) -> list[dict[str, Any]]:
    """The Service and the Indexed Job of ``spec`` (module docstring)."""
    name = dns_name(spec.name)
    labels = {**MANAGED, LABEL: name}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "clusterIP": "None",
            "selector": {LABEL: name},
            # rank 0 must resolve before it is "ready": it is the rendezvous itself
            "publishNotReadyAddresses": True,
            "ports": [{"name": "rendezvous", "port": PORT, "targetPort": PORT}],
        },
    }
    per = spec.ranks_per_node
    static = rank_env(
        job_id=name,
        rank="$(GROUP_RANK)" if per == 1 else "<set per rank by dolmen.jobs.launch>",
        local_rank=0,
        node_rank="$(GROUP_RANK)",
        world_size=spec.world_size,
        local_world_size=per,
        num_nodes=spec.nodes,
        master_addr=f"{name}-0.{name}",
        master_port=PORT,
        restart_count="",
        checkpoint_dir=spec.checkpoint_dir,
        gpus=None,  # the NVIDIA device plugin sets the visible devices
    )
    # GROUP_RANK and the restart count come from the pod's own annotations (downward
    # API); `$(VAR)` references only see variables defined above them in the list.
    env: list[dict[str, Any]] = [
        {"name": "GROUP_RANK", "valueFrom": {"fieldRef": {"fieldPath": _COMPLETION_INDEX}}},
        {"name": "DOLMEN_RESTART_COUNT", "valueFrom": {"fieldRef": {"fieldPath": _FAILURE_COUNT}}},
    ]
    skip = {"GROUP_RANK", "DOLMEN_RESTART_COUNT"} | ({"RANK", "LOCAL_RANK"} if per > 1 else set())
    env += [{"name": k, "value": v} for k, v in static.items() if k not in skip]
    env += [{"name": k, "value": v} for k, v in sorted(spec.env.items())]
    command = list(spec.command)
    if per > 1:  # one pod per node; dolmen's launcher starts the node's ranks inside it
        command = [python, "-m", "dolmen.jobs.launch", "--procs-per-node", str(per), "--", *command]
    container: dict[str, Any] = {"name": CONTAINER, "image": spec.image or "", "env": env}
    if command:
        container["command"] = command
    if spec.workdir:
        container["workingDir"] = spec.workdir
    if spec.gpus_per_node:
        container["resources"] = {
            "limits": {GPU: spec.gpus_per_node},
            "requests": {GPU: spec.gpus_per_node},
        }
    pod: dict[str, Any] = {"subdomain": name, "restartPolicy": "Never", "containers": [container]}
    if spec.checkpoint_dir:
        container["volumeMounts"] = [{"name": "checkpoints", "mountPath": spec.checkpoint_dir}]
        pod["volumes"] = [
            {"name": "checkpoints", "persistentVolumeClaim": {"claimName": checkpoint_claim}}
        ]
    job_spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": spec.nodes,
        "parallelism": spec.nodes,
        # One fault usually fails every node's pod (the collective breaks), hence the
        # per-index limit for "restarts" and a whole-job cap of restarts x nodes.
        "backoffLimitPerIndex": spec.max_restarts,
        "backoffLimit": spec.max_restarts * spec.nodes,
        "podFailurePolicy": {
            "rules": [
                {
                    "action": "FailJob",
                    "onExitCodes": {
                        "containerName": CONTAINER,
                        "operator": "In",
                        "values": list(CONFIG_ERROR_CODES),
                    },
                },
                {
                    "action": "Ignore",
                    "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                },
                {
                    "action": "Count",
                    "onExitCodes": {
                        "containerName": CONTAINER,
                        "operator": "NotIn",
                        "values": list(CONFIG_ERROR_CODES),
                    },
                },
            ]
        },
        "template": {"metadata": {"labels": labels}, "spec": pod},
    }
    if spec.time_limit_s:
        job_spec["activeDeadlineSeconds"] = spec.time_limit_s
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": job_spec,
    }
    return [service, job]


def resource_quota(namespace: str, gpus: int) -> dict[str, Any]:
    """The ResourceQuota limiting a namespace's pods to ``gpus`` GPUs requested at once."""
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": QUOTA_NAME, "namespace": namespace, "labels": dict(MANAGED)},
        "spec": {"hard": {f"requests.{GPU}": str(gpus)}},
    }
