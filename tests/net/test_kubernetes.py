"""NetworkPolicy objects (dolmen.net.kubernetes) against the official schemas
(kubernetes-validate), what they allow, and the host-network pod finder."""

from __future__ import annotations

from typing import Any

import pytest

from dolmen.jobs.kubernetes import pod
from dolmen.net.kubernetes import (
    DENY,
    DNS,
    JOB_LABEL,
    MANAGED,
    MANAGEMENT,
    Port,
    host_network_pods,
    job_net,
    network_policies,
)
from dolmen.net.model import parse_policy

kubernetes_validate = pytest.importorskip("kubernetes_validate")
VERSIONS = ("1.30.0", "1.33.0")
POLICY = parse_policy(
    """
[management]
from = ["10.0.0.0/24", "fd00::/64"]
[management.services]
ssh = 22
monitoring = { tcp = [9100, 9400] }
[jobs]
tcp = ["29500", "40000-40100"]
[tenants.research]
tcp = [29500, "50000-50010"]
udp = 4791
[tenants.vision]
"""
)


def _objects(tenant: str | None = None) -> list[dict[str, Any]]:
    net = job_net(POLICY, "llama-ft", "team-a", tenant=tenant, extra=(Port("TCP", pod.PORT),))
    return network_policies(net)


@pytest.mark.parametrize("tenant", [None, "research", "vision"])
@pytest.mark.parametrize("version", VERSIONS)
def test_official_schemas(tenant: str | None, version: str) -> None:
    for obj in _objects(tenant):
        kubernetes_validate.validate(obj, version, strict=True)


def test_the_objects() -> None:
    deny, dns, mgmt, job = _objects("research")
    assert deny["metadata"]["name"] == DENY and deny["spec"] == {
        "podSelector": {},
        "policyTypes": ["Ingress", "Egress"],
    }
    assert dns["metadata"]["name"] == DNS
    assert dns["spec"]["egress"][0]["ports"] == [
        {"protocol": "UDP", "port": 53},
        {"protocol": "TCP", "port": 53},
    ]
    assert mgmt["metadata"]["name"] == MANAGEMENT
    assert mgmt["spec"]["ingress"][0]["from"] == [
        {"ipBlock": {"cidr": "10.0.0.0/24"}},
        {"ipBlock": {"cidr": "fd00::/64"}},
    ]
    assert [p["port"] for p in mgmt["spec"]["ingress"][0]["ports"]] == [22, 9100, 9400]
    assert job["metadata"]["name"] == "dolmen-job-llama-ft"
    selector = {"matchLabels": {JOB_LABEL: "llama-ft"}}
    assert job["spec"]["podSelector"] == selector
    assert job["spec"]["ingress"][0]["from"] == [{"podSelector": selector}]
    assert job["spec"]["egress"][0]["to"] == [{"podSelector": selector}]
    assert job["spec"]["ingress"][0]["ports"] == [
        {"protocol": "TCP", "port": 29500},
        {"protocol": "TCP", "port": 50000, "endPort": 50010},
        {"protocol": "UDP", "port": 4791},
    ]
    assert all(o["metadata"]["labels"].items() >= MANAGED.items() for o in (deny, dns, job))


def test_the_jobs_backend_label_is_the_one_selected() -> None:
    assert pod.LABEL == JOB_LABEL and pod.MANAGED == MANAGED


def test_default_ports_and_rendezvous() -> None:
    *_, job = _objects()
    assert job["spec"]["ingress"][0]["ports"] == [
        {"protocol": "TCP", "port": 29500},
        {"protocol": "TCP", "port": 40000, "endPort": 40100},
    ]


def test_no_management_object_without_a_management_plane() -> None:
    net = job_net(parse_policy("[jobs]\ntcp = 29500\n"), "j", "ns")
    assert [o["metadata"]["name"] for o in network_policies(net)] == [DENY, DNS, "dolmen-job-j"]


def test_unknown_tenant() -> None:
    with pytest.raises(ValueError, match="tenants: research, vision"):
        job_net(POLICY, "j", "ns", tenant="nobody")


def _pod(host: object) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if host is not None:
        spec["hostNetwork"] = host
    return spec


@pytest.mark.parametrize(
    ("objects", "found"),
    [
        ([{"kind": "Pod", "metadata": {"name": "p"}, "spec": _pod(True)}], ["Pod/p: .spec"]),
        ([{"kind": "Pod", "metadata": {"name": "p"}, "spec": _pod(False)}], []),
        ([{"kind": "Pod", "metadata": {"name": "p"}, "spec": _pod(None)}], []),
        (
            [
                {
                    "kind": "JobSet",
                    "metadata": {"generateName": "js-"},
                    "spec": {
                        "replicatedJobs": [
                            {"template": {"spec": {"template": {"spec": _pod(True)}}}}
                        ]
                    },
                }
            ],
            ["JobSet/js-: .spec.replicatedJobs[0].template.spec.template.spec"],
        ),
        ([{"kind": "Pod", "spec": _pod("true")}], []),  # a string is not the boolean
        (["junk", None, 3, {"kind": "Pod"}], []),
    ],
)
def test_host_network_pods(objects: list[Any], found: list[str]) -> None:
    assert host_network_pods(objects) == found
