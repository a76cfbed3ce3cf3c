"""Kubernetes manifests of a job, pure functions of the spec (what ``plan`` prints).

Two workloads run the same pods (``pod.pod_template``: torchrun from the image's own
Python, /dev/shm, fabric devices, tolerations, requests):

- a JobSet (``jobset.py``, the default where the cluster has the JobSet controller):
  one fault restarts every node's pod together, up to ``max_restarts`` times;
- an Indexed Job (here, ``workload = "job"`` or a cluster without JobSet) with a
  headless Service so that node 0 answers at ``<job>-0.<service>`` (MASTER_ADDR),
  one pod per node (completions = parallelism = nodes), restartPolicy Never and a
  podFailurePolicy: pods evicted or preempted (DisruptionTarget) are recreated without
  counting, a configuration error (exit 2, 126 not executable, 127 not found) fails the
  job at once, any other failure counts. Only the failed index is recreated: the
  survivors of a broken collective wait for NCCL's timeout, which is why JobSet is the
  default.

Names: the workload has ``generateName`` (two submissions of one job never collide) and a
``ttlSecondsAfterFinished``; Volcano's PodGroup gets an ownerReference to it at submit,
once the API server has given it a uid, so that it goes with it. The Indexed Job's
headless Service is shared by the jobs of one name (their pods' hostnames differ) and
owned by none of them. Gang scheduling when asked: Kueue (the ``kueue.x-k8s.io/queue-name`` label:
admitted whole or not at all) or Volcano (schedulerName volcano and a PodGroup of
minMember = nodes).

Schemas checked by the tests with kubernetes-validate against ``KUBE_VERSION``, the
JobSet against its CRD's openAPIV3Schema.
"""

from __future__ import annotations

import re
from typing import Any

from dolmen.jobs.kubernetes.pod import (
    COMPLETION_INDEX,
    CONTAINER,
    GPU,
    LABEL,
    MANAGED,
    PORT,
    pod_template,
)
from dolmen.jobs.spec import JobSpec

__all__ = ["GPU", "LABEL", "MANAGED", "PORT", "dns_name", "job_manifests", "resource_quota"]
KUBE_VERSION = "1.30.0"  # backoffLimitPerIndex and podFailurePolicy are beta there, on by default
CONFIG_ERROR_CODES = (2, 126, 127)  # dolmen's bad input; not executable; not found
QUOTA_NAME = "dolmen-gpu-quota"
KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
DEFAULT_TTL_S = 86400  # a finished job's objects stay a day for its logs, then go
_FAILURE_COUNT = "metadata.annotations['batch.kubernetes.io/job-index-failure-count']"
_JOB_NAME = "metadata.labels['batch.kubernetes.io/job-name']"


def dns_name(name: str, limit: int = 52) -> str:
    """A DNS-1123 label from a job name (lowercase, '-', at most ``limit`` characters so
    that the generated names and the pods' hostnames stay under 63)."""
    label = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:limit].strip("-")
    return label or "job"


def gang(spec: JobSpec, name: str) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The workload's labels for Kueue, and Volcano's PodGroup ``name`` (the pods'
    ``scheduling.k8s.io/group-name``; owned by the workload at submit). The backend makes
    a Volcano job's name unique at submit (``KubernetesBackend.resolve``): the PodGroup
    must be named before the API server names the workload."""
    opts = spec.kubernetes
    labels = {KUEUE_QUEUE: opts.queue} if opts.gang == "kueue" and opts.queue else {}
    groups = []
    if opts.gang == "volcano":
        group: dict[str, Any] = {"minMember": spec.nodes}
        if opts.queue:
            group["queue"] = opts.queue
        groups.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": name, "labels": {**MANAGED, LABEL: name}},
                "spec": group,
            }
        )
    return labels, groups


def owned(obj: dict[str, Any], owner: dict[str, Any]) -> dict[str, Any]:
    """``obj`` owned by the created ``owner`` (its name and uid from the API server):
    deleted with it by the garbage collector."""
    meta = owner["metadata"]
    ref = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": False,
        "blockOwnerDeletion": True,
    }
    return {**obj, "metadata": {**obj["metadata"], "ownerReferences": [ref]}}


def job_manifests(
    spec: JobSpec,
    *,
    namespace: str,
    python: str = "python3",
    checkpoint_claim: str = "dolmen-checkpoints",
) -> list[dict[str, Any]]:
    """The Service and the Indexed Job of ``spec`` (module docstring), then any PodGroup."""
    name = dns_name(spec.name)
    labels = {**MANAGED, LABEL: name}
    # The Service is shared by every job of this name: its pods' hostnames differ
    # (<generated job name>-<index>), so their DNS records do too.
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "clusterIP": "None",
            "selector": {LABEL: name},
            # node 0 must resolve before it is "ready": it is the rendezvous itself
            "publishNotReadyAddresses": True,
            "ports": [{"name": "rendezvous", "port": PORT, "targetPort": PORT}],
        },
    }
    # `$(VAR)` references only see variables defined above them in the list.
    env: list[dict[str, Any]] = [
        {"name": "GROUP_RANK", "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX}}},
        {"name": "DOLMEN_RESTART_COUNT", "valueFrom": {"fieldRef": {"fieldPath": _FAILURE_COUNT}}},
        {"name": "DOLMEN_JOB_ID", "valueFrom": {"fieldRef": {"fieldPath": _JOB_NAME}}},
        {"name": "MASTER_ADDR", "value": f"$(DOLMEN_JOB_ID)-0.{name}"},
        {"name": "MASTER_PORT", "value": str(PORT)},
    ]
    kueue, groups = gang(spec, name)
    template = pod_template(
        spec, name=name, env=env, python=python, checkpoint_claim=checkpoint_claim, subdomain=name
    )
    job_spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": spec.nodes,
        "parallelism": spec.nodes,
        # One fault usually fails every node's pod (the collective breaks), hence the
        # per-index limit for "restarts" and a whole-job cap of restarts x nodes.
        "backoffLimitPerIndex": spec.max_restarts,
        "backoffLimit": spec.max_restarts * spec.nodes,
        "podFailurePolicy": pod_failure_policy(),
        "ttlSecondsAfterFinished": ttl(spec),
        "template": template,
    }
    if spec.time_limit_s:
        job_spec["activeDeadlineSeconds"] = spec.time_limit_s
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "generateName": f"{name}-",
            "namespace": namespace,
            "labels": {**labels, **kueue},
        },
        "spec": job_spec,
    }
    return [service, job, *(_in(g, namespace) for g in groups)]


def pod_failure_policy() -> dict[str, Any]:
    """FailJob on a configuration error, Ignore a disruption, Count anything else."""
    codes = list(CONFIG_ERROR_CODES)
    return {
        "rules": [
            {
                "action": "FailJob",
                "onExitCodes": {"containerName": CONTAINER, "operator": "In", "values": codes},
            },
            {
                "action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            },
            {
                "action": "Count",
                "onExitCodes": {"containerName": CONTAINER, "operator": "NotIn", "values": codes},
            },
        ]
    }


def ttl(spec: JobSpec) -> int:
    """Seconds a finished workload is kept (the job file's ``ttl``, else a day)."""
    chosen = spec.kubernetes.ttl_s
    return DEFAULT_TTL_S if chosen is None else chosen


def _in(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "namespace": namespace}}


def resource_quota(namespace: str, gpus: int) -> dict[str, Any]:
    """The ResourceQuota limiting a namespace's pods to ``gpus`` GPUs requested at once."""
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": QUOTA_NAME, "namespace": namespace, "labels": dict(MANAGED)},
        "spec": {"hard": {f"requests.{GPU}": str(gpus)}},
    }
