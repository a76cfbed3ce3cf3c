"""A Kubernetes job's NetworkPolicy objects, where the site has a network policy
(dolmen.net.kubernetes; docs/net-targets.md)."""

from __future__ import annotations

from typing import Any

from dolmen.errors import UsageError
from dolmen.jobs.kubernetes.manifests import dns_name
from dolmen.jobs.kubernetes.pod import LABEL, PORT
from dolmen.jobs.spec import JobSpec


def policy_path(explicit: str | None) -> str | None:
    """The policy file: the backend's ``net_policy``, else ``[net] policy`` of dolmen.toml."""
    if explicit is not None:
        return explicit or None
    from dolmen.config import load_config

    value = load_config(None).get("net", "policy", None)
    return str(value) if value else None


def isolation(
    explicit: str | None, spec: JobSpec, objects: list[dict[str, Any]], namespace: str
) -> list[dict[str, Any]]:
    """The NetworkPolicy objects of ``spec``'s job ([] without a policy). UsageError for a
    pod with hostNetwork (no NetworkPolicy governs it) or a policy that refuses the job."""
    path = policy_path(explicit)
    if path is None:
        return []
    from dolmen.net.kubernetes import Port, host_network_pods, job_net, network_policies
    from dolmen.net.model import load_policy

    refused = host_network_pods(objects)
    if refused:
        raise UsageError(
            "the network policy cannot isolate pods with hostNetwork: " + "; ".join(refused),
            hint="remove hostNetwork from the pod spec",
        )
    policy = load_policy(path)
    tenant = spec.account if spec.account in policy.tenants else None
    net = job_net(policy, dns_name(spec.name), namespace, tenant=tenant, extra=(Port("TCP", PORT),))
    return network_policies(net, label=LABEL)


def apply_network_policy(networking: Any, namespace: str, obj: dict[str, Any]) -> None:
    """Create ``obj``, or replace the one of its name (the namespace's shared objects are
    rewritten by every job: the same content, from the same policy)."""
    from dolmen.jobs.kubernetes.api import module

    name = obj["metadata"]["name"]
    try:
        networking.create_namespaced_network_policy(namespace, obj)
    except module("kubernetes.client").exceptions.ApiException as e:
        if e.status != 409:
            raise
        networking.replace_namespaced_network_policy(name, namespace, obj)
