"""The JobSet a NCCL job renders, validated against the JobSet CRD's own openAPIV3Schema
(kubernetes-sigs/jobset v0.12.0, vendored in tests/jobs/data with its provenance) made
strict, and its Job template against the official Kubernetes schemas."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from dolmen.jobs.backend import JobState
from dolmen.jobs.kubernetes import jobset as js
from dolmen.jobs.kubernetes import manifests as kube
from dolmen.jobs.kubernetes.backend import KubernetesBackend
from dolmen.jobs.kubernetes.options import PodOptions
from dolmen.jobs.kubernetes.pod import memory_quantity, torchrun
from dolmen.jobs.kubernetes.status import jobset_status
from dolmen.jobs.spec import JobSpec
from tests.crd import crd_schema

kubernetes_validate = pytest.importorskip("kubernetes_validate")
CRD = Path(__file__).parent / "data" / "jobset.x-k8s.io_jobsets.v0.12.0.yaml.gz"
VERSIONS = (kube.KUBE_VERSION, "1.33.0")

NCCL = JobSpec(
    name="Llama_FT.v2",
    command=("python", "train.py", "--lr", "3e-4"),
    image="nvcr.io/nvidia/pytorch:24.05-py3",
    nodes=4,
    gpus_per_node=8,
    checkpoint_dir="/ckpt",
    max_restarts=3,
    time_limit_s=7200,
    workdir="/src",
    mem="500G",
    cpus_per_task=12,
    env={"NCCL_DEBUG": "WARN"},
    kubernetes=PodOptions(
        shm_size="64Gi",
        resources={"rdma/rdma_shared_device_a": 1, "nvidia.com/hostdev": 8},
        networks=("sriov-ib0", "net/roce@net1"),
        tolerations=(
            {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
        ),
        node_selector={"topology.kubernetes.io/zone": "a"},
        gpu_product="NVIDIA-H100-80GB-HBM3",
        gang="kueue",
        queue="team-a",
        ttl_s=3600,
    ),
)
PLAIN = JobSpec(name="single", command=("./run.sh",), image="img", nodes=2)


@cache
def schema() -> dict[str, Any]:
    """The CRD's v1alpha2 schema, strict (tests/crd.py)."""
    return crd_schema(CRD, "v1alpha2")


def render(spec: JobSpec, **options: Any) -> list[dict[str, Any]]:
    backend = KubernetesBackend(namespace="team-a", **options)
    plan = backend.plan(spec)
    (text,) = plan.artifacts.values()
    docs = list(yaml.safe_load_all(text))
    assert docs == backend.manifests(spec)  # the YAML is the data
    return docs


def _pod(jobset: dict[str, Any]) -> dict[str, Any]:
    template: dict[str, Any] = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    return template


@pytest.mark.parametrize("spec", [NCCL, PLAIN], ids=["nccl", "plain"])
def test_the_jobset_passes_its_crd_schema(spec: JobSpec) -> None:
    (jobset,) = render(spec)
    jsonschema.validate(jobset, schema())


@pytest.mark.parametrize("spec", [NCCL, PLAIN], ids=["nccl", "plain"])
@pytest.mark.parametrize("version", VERSIONS)
def test_its_job_template_passes_the_official_schemas(spec: JobSpec, version: str) -> None:
    (jobset,) = render(spec)
    template = jobset["spec"]["replicatedJobs"][0]["template"]
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"}, **template}
    job["metadata"] = {"name": "x", **template["metadata"]}
    kubernetes_validate.validate(job, version, strict=True)


def test_the_strict_schema_bites() -> None:
    (jobset,) = render(PLAIN)
    jobset["spec"]["failurePolicy"]["maxRestart"] = 3  # a typo
    with pytest.raises(jsonschema.ValidationError, match="maxRestart"):
        jsonschema.validate(jobset, schema())
    (jobset,) = render(PLAIN)
    jobset["spec"]["failurePolicy"]["rules"][0]["action"] = "Retry"
    with pytest.raises(jsonschema.ValidationError, match="Retry"):
        jsonschema.validate(jobset, schema())


def test_the_whole_group_restarts_and_names_never_collide() -> None:
    (jobset,) = render(NCCL)
    meta, spec = jobset["metadata"], jobset["spec"]
    assert meta["generateName"] == "llama-ft-v2-" and "name" not in meta
    assert meta["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
    assert spec["failurePolicy"] == {
        "maxRestarts": 3,
        "rules": [
            {
                "name": "ConfigurationError",
                "action": "FailJobSet",
                "onJobFailureReasons": ["PodFailurePolicy"],
            }
        ],
    }
    assert spec["ttlSecondsAfterFinished"] == 3600
    assert spec["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    job = spec["replicatedJobs"][0]["template"]["spec"]
    assert (job["completions"], job["parallelism"], job["backoffLimit"]) == (4, 4, 0)
    assert job["activeDeadlineSeconds"] == 7200
    # the longest name still gives pod hostnames of at most 63 characters
    (long,) = render(JobSpec(name="x" * 63, command=("t",), image="i", nodes=16384))
    prefix = long["metadata"]["generateName"]
    assert len(f"{prefix}abcde-{js.REPLICATED_JOB}-0-16383") <= 63


def test_the_pod_has_what_nccl_needs() -> None:
    (jobset,) = render(NCCL)
    pod = _pod(jobset)
    (c,) = pod["spec"]["containers"]
    assert c["command"][:3] == ["python3", "-m", "torch.distributed.run"]
    assert c["command"][-3:] == ["train.py", "--lr", "3e-4"]
    env = {e["name"]: e for e in c["env"]}
    assert env["MASTER_ADDR"]["value"] == "$(DOLMEN_JOB_ID)-workers-0-0.$(DOLMEN_JOB_ID)"
    assert env["DOLMEN_JOB_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.labels['jobset.sigs.k8s.io/jobset-name']"
    )
    assert env["DOLMEN_RESTART_COUNT"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.labels['jobset.sigs.k8s.io/restart-attempt']"
    )
    assert env["DOLMEN_CHECKPOINT_DIR"]["value"] == "/ckpt"
    assert c["resources"] == {
        "requests": {
            "cpu": "96",  # 12 per rank x 8 ranks
            "memory": "500Gi",
            "nvidia.com/gpu": 8,
            "nvidia.com/hostdev": 8,
            "rdma/rdma_shared_device_a": 1,
        },
        "limits": {"nvidia.com/gpu": 8, "nvidia.com/hostdev": 8, "rdma/rdma_shared_device_a": 1},
    }
    assert c["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
    assert {"name": "dshm", "mountPath": "/dev/shm"} in c["volumeMounts"]
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "64Gi"}
    assert volumes["checkpoints"]["persistentVolumeClaim"]["claimName"] == "dolmen-checkpoints"
    assert pod["metadata"]["annotations"] == {
        "k8s.v1.cni.cncf.io/networks": "sriov-ib0,net/roce@net1"
    }
    assert pod["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
    ]
    assert pod["spec"]["nodeSelector"] == {
        "topology.kubernetes.io/zone": "a",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
    }


def test_a_plain_pod_is_burstable_without_fabric_extras() -> None:
    (jobset,) = render(PLAIN)
    pod = _pod(jobset)
    (c,) = pod["spec"]["containers"]
    assert c["command"][-2:] == ["--no-python", "./run.sh"]
    assert c["resources"]["requests"] == {"cpu": "1", "memory": "4Gi"}
    assert "securityContext" not in c and "annotations" not in pod["metadata"]
    assert "tolerations" not in pod["spec"] and "nodeSelector" not in pod["spec"]
    assert pod["spec"]["volumes"][0]["emptyDir"] == {"medium": "Memory", "sizeLimit": "16Gi"}


def test_volcano_gets_a_podgroup_named_before_submission() -> None:
    spec = JobSpec(
        name="vc",
        command=("python", "t.py"),
        image="i",
        nodes=3,
        kubernetes=PodOptions(gang="volcano", queue="research"),
    )
    backend = KubernetesBackend(namespace="team-a", workload="jobset")
    first, second = backend.resolve(spec), backend.resolve(spec)
    assert first.name != second.name and first.name.startswith("vc-")
    jobset, group = backend.manifests(first)
    name = kube.dns_name(first.name, js.PREFIX_MAX)
    assert group["kind"] == "PodGroup" and group["metadata"]["name"] == name
    assert group["spec"] == {"minMember": 3, "queue": "research"}
    pod = _pod(jobset)
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == name
    created = {**jobset, "metadata": {**jobset["metadata"], "name": f"{name}-x1y2z", "uid": "u-1"}}
    (ref,) = kube.owned(group, created)["metadata"]["ownerReferences"]
    assert ref == {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "name": f"{name}-x1y2z",
        "uid": "u-1",
        "controller": False,
        "blockOwnerDeletion": True,
    }


def test_indexed_job_only_when_asked() -> None:
    assert [d["kind"] for d in render(PLAIN)] == ["JobSet"]
    assert [d["kind"] for d in render(PLAIN, workload="job")] == ["Service", "Job"]
    asked = JobSpec(**{**PLAIN.__dict__, "kubernetes": PodOptions(workload="job")})
    assert [d["kind"] for d in render(asked)] == ["Service", "Job"]


@pytest.mark.parametrize(
    ("command", "tail"),
    [
        (("python", "train.py", "--x", "1"), ["train.py", "--x", "1"]),
        (("/usr/bin/python3.11", "t.py"), ["t.py"]),
        (("python3", "-m", "pkg.train"), ["-m", "pkg.train"]),
        (("python", "-c", "print(1)"), ["--no-python", "python", "-c", "print(1)"]),
        (("python",), ["--no-python", "python"]),
        (("./run.sh", "a"), ["--no-python", "./run.sh", "a"]),
    ],
)
def test_torchrun_runs_the_program(command: tuple[str, ...], tail: list[str]) -> None:
    argv = torchrun(JobSpec(name="j", command=command, image="i"), "python3")
    assert argv[-len(tail) :] == tail and argv[9 : 9 + len(tail)] == tail


@pytest.mark.parametrize(
    ("mem", "quantity"), [("500G", "500Gi"), ("64000", "64000Mi"), ("1T", "1Ti"), ("8K", "8Ki")]
)
def test_slurm_memory_as_a_quantity(mem: str, quantity: str) -> None:
    assert memory_quantity(mem) == quantity


@pytest.mark.parametrize(
    ("status", "state", "restarts", "reason"),
    [
        ({}, JobState.PENDING, 0, ""),
        ({"conditions": [{"type": "Completed", "status": "True"}]}, JobState.COMPLETED, 0, ""),
        (
            {
                "restarts": 3,
                "conditions": [{"type": "Failed", "status": "True", "message": "reached max"}],
            },
            JobState.FAILED,
            3,
            "reached max",
        ),
        (
            {"conditions": [{"type": "Suspended", "status": "True"}]},
            JobState.PENDING,
            0,
            "suspended",
        ),
        (
            {"conditions": [{"type": "Completed", "status": "False"}], "restarts": 1},
            JobState.RUNNING,
            1,
            "",
        ),
        ({"replicatedJobsStatus": [{"name": "workers", "active": 1}]}, JobState.RUNNING, 0, ""),
    ],
)
def test_jobset_status(status: dict[str, Any], state: JobState, restarts: int, reason: str) -> None:
    obj = {
        "metadata": {"name": "t-abcde", "namespace": "ns", "labels": {kube.LABEL: "t"}},
        "status": status,
    }
    st = jobset_status(obj)
    assert (st.job_id, st.name, st.state, st.restarts) == ("t-abcde", "t", state, restarts)
    assert st.reason.startswith(reason) and st.details["workload"] == "JobSet"
