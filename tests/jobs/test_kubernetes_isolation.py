"""A Kubernetes job's manifests gain its NetworkPolicy objects where the site has a
network policy (jobs/kubernetes/isolation.py), valid against the official schemas."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dolmen.errors import UsageError
from dolmen.jobs.kubernetes.backend import KubernetesBackend
from dolmen.jobs.kubernetes.isolation import isolation
from dolmen.jobs.spec import JobSpec

kubernetes_validate = pytest.importorskip("kubernetes_validate")
SPEC = JobSpec(
    name="Llama_FT", command=("python", "t.py"), image="img", nodes=2, account="research"
)
POLICY = '[jobs]\ntcp = "40000-40100"\n[tenants.research]\ntcp = [29500, "50000-50010"]\n'


@pytest.fixture
def policy(tmp_path: Path) -> str:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    return str(path)


@pytest.mark.parametrize("workload", ["jobset", "job"])
def test_plan_carries_the_policies(policy: str, workload: str) -> None:
    backend = KubernetesBackend(namespace="team-a", workload=workload, net_policy=policy)
    [text] = backend.plan(SPEC).artifacts.values()
    docs = list(yaml.safe_load_all(text))
    kinds = [d["kind"] for d in docs]
    assert kinds.count("NetworkPolicy") == 3  # deny, DNS, the job's (no management plane)
    job = next(d for d in docs if d["metadata"].get("name") == "dolmen-job-llama-ft")
    # the research tenant's ports and the rendezvous, between the job's pods only
    assert [p["port"] for p in job["spec"]["ingress"][0]["ports"]] == [29500, 50000]
    for doc in docs:
        if doc["kind"] == "NetworkPolicy":
            kubernetes_validate.validate(doc, "1.30.0", strict=True)


def test_no_policy_no_change() -> None:
    backend = KubernetesBackend(namespace="team-a", workload="job", net_policy="")
    assert [d["kind"] for d in backend.manifests(SPEC)] == ["Service", "Job"]


def test_host_network_refused(policy: str) -> None:
    pod = {
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"hostNetwork": True, "containers": []},
    }
    with pytest.raises(UsageError, match="hostNetwork: Pod/p"):
        isolation(policy, SPEC, [pod], "team-a")
