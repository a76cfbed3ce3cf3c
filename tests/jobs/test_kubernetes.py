"""Kubernetes manifests, validated against the official schemas (kubernetes-validate), and
what the backend says without an API server (none can run here)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dolmen.errors import ServiceUnavailable, UsageError
from dolmen.jobs.kubernetes import manifests as kube
from dolmen.jobs.kubernetes.api import find_kubeconfig
from dolmen.jobs.kubernetes.backend import KubernetesBackend
from dolmen.jobs.quota import Kind, Subject
from dolmen.jobs.spec import JobSpec

kubernetes_validate = pytest.importorskip("kubernetes_validate")
VERSIONS = (kube.KUBE_VERSION, "1.33.0")

SPECS = {
    "multi-node": JobSpec(
        name="Llama_FT.v2",
        command=("python", "train.py"),
        image="nvcr.io/nvidia/pytorch:24.05-py3",
        nodes=4,
        gpus_per_node=8,
        procs_per_node=8,
        checkpoint_dir="/ckpt",
        max_restarts=3,
        time_limit_s=7200,
        workdir="/src",
        env={"NCCL_DEBUG": "WARN", "FLAG": "on"},
    ),
    "one-rank-per-pod": JobSpec(name="single", command=("python", "t.py"), image="img", nodes=2),
}


def manifests(spec: JobSpec) -> list[dict[str, object]]:
    """The Indexed Job form (``workload="job"``); tests/jobs/test_jobset.py has the JobSet."""
    text = (
        KubernetesBackend(namespace="team-a", workload="job")
        .plan(spec)
        .artifacts[f"{kube.dns_name(spec.name)}.yaml"]
    )
    return list(yaml.safe_load_all(text))


@pytest.mark.parametrize("name", SPECS)
@pytest.mark.parametrize("version", VERSIONS)
def test_manifests_pass_the_official_schemas(name: str, version: str) -> None:
    docs = manifests(SPECS[name])
    backend = KubernetesBackend(namespace="team-a", workload="job")
    assert docs == backend.manifests(SPECS[name])  # YAML == data
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)


def test_resource_quota_passes_the_official_schemas() -> None:
    for version in VERSIONS:
        kubernetes_validate.validate(kube.resource_quota("research", 16), version, strict=True)


def test_the_indexed_job() -> None:
    service, job = manifests(SPECS["multi-node"])
    assert job["metadata"]["generateName"] == "llama-ft-v2-"  # type: ignore[index]
    assert "name" not in job["metadata"]  # type: ignore[operator]
    assert job["spec"]["ttlSecondsAfterFinished"] == 86400  # type: ignore[index]
    name = "llama-ft-v2"
    assert service["spec"] == {  # type: ignore[index]
        "clusterIP": "None",
        "selector": {kube.LABEL: name},
        "publishNotReadyAddresses": True,
        "ports": [{"name": "rendezvous", "port": 29500, "targetPort": 29500}],
    }
    spec = job["spec"]  # type: ignore[index]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 4, 4)
    assert spec["backoffLimitPerIndex"] == 3 and spec["activeDeadlineSeconds"] == 7200
    rules = spec["podFailurePolicy"]["rules"]
    assert rules[0]["action"] == "FailJob" and rules[0]["onExitCodes"]["values"] == [2, 126, 127]
    assert rules[1] == {
        "action": "Ignore",
        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
    }
    pod = spec["template"]["spec"]
    assert pod["subdomain"] == name and pod["restartPolicy"] == "Never"
    (c,) = pod["containers"]
    assert c["resources"]["limits"] == {"nvidia.com/gpu": 8}
    # torchrun from the image's own Python: no dolmen inside the image
    assert c["command"] == [
        "python3",
        "-m",
        "torch.distributed.run",
        "--nnodes=4",
        "--nproc-per-node=8",
        "--node-rank=$(GROUP_RANK)",
        "--master-addr=$(MASTER_ADDR)",
        "--master-port=29500",
        "--max-restarts=0",
        "train.py",
    ]
    env = {e["name"]: e for e in c["env"]}
    assert env["GROUP_RANK"]["valueFrom"]["fieldRef"]["fieldPath"].endswith(
        "['batch.kubernetes.io/job-completion-index']"
    )
    assert env["DOLMEN_JOB_ID"]["valueFrom"]["fieldRef"]["fieldPath"].endswith(
        "['batch.kubernetes.io/job-name']"
    )
    assert env["MASTER_ADDR"]["value"] == f"$(DOLMEN_JOB_ID)-0.{name}"
    assert env["FLAG"]["value"] == "on"  # a string, not YAML 1.1's boolean
    assert "RANK" not in env and "WORLD_SIZE" not in env  # torchrun sets them per rank
    names = [e["name"] for e in c["env"]]
    assert names.index("DOLMEN_JOB_ID") < names.index("MASTER_ADDR")


def test_one_rank_per_pod_runs_torchrun_too() -> None:
    _, job = manifests(SPECS["one-rank-per-pod"])
    (c,) = job["spec"]["template"]["spec"]["containers"]  # type: ignore[index]
    assert c["command"][3:5] == ["--nnodes=2", "--nproc-per-node=1"]
    assert c["command"][-1] == "t.py"
    # a CPU pod still asks for CPU and memory: Burstable, not BestEffort
    assert c["resources"] == {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {}}


def test_plan_needs_an_image() -> None:
    with pytest.raises(UsageError, match="needs --image"):
        KubernetesBackend().plan(JobSpec(name="x", command=("true",)))


def test_without_a_kubeconfig_nothing_is_submitted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    backend = KubernetesBackend()
    with pytest.raises(ServiceUnavailable, match="no kubeconfig") as err:
        backend.submit(SPECS["one-rank-per-pod"])
    assert err.value.exit_code == 3
    with pytest.raises(ServiceUnavailable, match="no kubeconfig"):
        backend.quotas().set_quota(Subject(Kind.GROUP, "research"), 8)
    assert 'requests.nvidia.com/gpu: "8"' in backend.quotas().render(
        Subject(Kind.GROUP, "research"), 8
    )  # type: ignore[attr-defined]
    with pytest.raises(UsageError, match="identity provider"):
        backend.quotas().users()


def test_find_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    cfg = tmp_path / "second"
    cfg.write_text("apiVersion: v1\n")
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'absent'}:{cfg}")
    assert find_kubeconfig() == cfg
    with pytest.raises(UsageError, match="no such kubeconfig"):
        find_kubeconfig(str(tmp_path / "nope"))


@pytest.mark.parametrize(
    ("name", "label"),
    [("Llama_FT.v2", "llama-ft-v2"), ("---", "job"), ("a" * 80, "a" * 52), ("x.y", "x-y")],
)
def test_dns_names(name: str, label: str) -> None:
    assert kube.dns_name(name) == label
