"""The JobSet of a job (jobset.x-k8s.io/v1alpha2), pure: what ``plan`` prints by default.

One replicated Job (``workers``) of ``nodes`` pods, Indexed. JobSet's point for NCCL: when
any pod fails, ``failurePolicy`` recreates every Job of the set (the survivors of a
broken collective would otherwise hang until NCCL's timeout), up to ``maxRestarts``
times; a configuration error (the Job's podFailurePolicy, reason ``PodFailurePolicy``)
fails the set at once instead. JobSet's headless Service (``network``) names every pod
``<jobset>-workers-0-<index>.<jobset>``; the generated JobSet name reaches the pods
through the label JobSet puts on them, so MASTER_ADDR is known without knowing the
name beforehand, and ``generateName`` can be used. The restart count comes from the
``restart-attempt`` label (DOLMEN_RESTART_COUNT). Checked against the CRD schema of
kubernetes-sigs/jobset v0.12.0 (tests/jobs/data).
"""

from __future__ import annotations

from typing import Any

from dolmen.jobs.kubernetes.manifests import dns_name, gang, pod_failure_policy, ttl
from dolmen.jobs.kubernetes.pod import COMPLETION_INDEX, LABEL, MANAGED, PORT, pod_template
from dolmen.jobs.spec import JobSpec

API_VERSION = "jobset.x-k8s.io/v1alpha2"
REPLICATED_JOB = "workers"
NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
RESTART_LABEL = "jobset.sigs.k8s.io/restart-attempt"
# The pods' hostnames are <name>-<5 random>-workers-0-<index> (generateName adds the
# five): at most 63 characters with a 5-digit index (MAX_NODES is 16384).
PREFIX_MAX = 63 - len("-") - 5 - len(f"-{REPLICATED_JOB}-0-") - 5


def jobset_manifests(
    spec: JobSpec,
    *,
    namespace: str,
    python: str = "python3",
    checkpoint_claim: str = "dolmen-checkpoints",
) -> list[dict[str, Any]]:
    """The JobSet of ``spec`` (module docstring), then any Volcano PodGroup."""
    name = dns_name(spec.name, PREFIX_MAX)
    labels = {**MANAGED, LABEL: name}
    label = f"metadata.labels['{NAME_LABEL}']"
    env: list[dict[str, Any]] = [
        {"name": "GROUP_RANK", "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX}}},
        {
            "name": "DOLMEN_RESTART_COUNT",
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{RESTART_LABEL}']"}},
        },
        {"name": "DOLMEN_JOB_ID", "valueFrom": {"fieldRef": {"fieldPath": label}}},
        {
            "name": "MASTER_ADDR",
            "value": f"$(DOLMEN_JOB_ID)-{REPLICATED_JOB}-0-0.$(DOLMEN_JOB_ID)",
        },
        {"name": "MASTER_PORT", "value": str(PORT)},
    ]
    kueue, groups = gang(spec, name)
    template = pod_template(
        spec, name=name, env=env, python=python, checkpoint_claim=checkpoint_claim
    )
    job: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": spec.nodes,
        "parallelism": spec.nodes,
        "backoffLimit": 0,  # any failure fails the Job: the JobSet restarts the group
        "podFailurePolicy": pod_failure_policy(),
        "template": template,
    }
    if spec.time_limit_s:
        job["activeDeadlineSeconds"] = spec.time_limit_s
    jobset = {
        "apiVersion": API_VERSION,
        "kind": "JobSet",
        "metadata": {
            "generateName": f"{name}-",
            "namespace": namespace,
            "labels": {**labels, **kueue},
        },
        "spec": {
            "failurePolicy": {
                "maxRestarts": spec.max_restarts,
                "rules": [
                    {
                        "name": "ConfigurationError",
                        "action": "FailJobSet",
                        "onJobFailureReasons": ["PodFailurePolicy"],
                    }
                ],
            },
            "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
            "ttlSecondsAfterFinished": ttl(spec),
            "replicatedJobs": [
                {
                    "name": REPLICATED_JOB,
                    "replicas": 1,
                    "template": {"metadata": {"labels": labels}, "spec": job},
                }
            ],
        },
    }
    return [jobset, *({**g, "metadata": {**g["metadata"], "namespace": namespace}} for g in groups)]
