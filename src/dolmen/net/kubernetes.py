"""The policy as Kubernetes NetworkPolicy objects in a job's namespace (pure).

Four objects, all ``networking.k8s.io/v1``, labelled ``app.kubernetes.io/managed-by:
dolmen``:

- ``dolmen-default-deny``: every pod of the namespace, ingress and egress, no rule. The
  base of the rest: NetworkPolicy has no deny rule, only an allow list, and a pod no
  policy selects is open to everything; this one selects them all.
- ``dolmen-allow-dns``: egress from every pod to the cluster DNS (``kube-dns`` pods in
  ``kube-system``; CoreDNS keeps that label) on 53/UDP and 53/TCP, without which no pod
  resolves its peers' names (the rendezvous is ``<job>-0.<service>``).
- ``dolmen-allow-management``: ingress from, and egress to, the management plane's
  addresses (ipBlock) on its ports only: monitoring scraping, the dolmen server.
- ``dolmen-job-<job>``: the job's pods (its label) may reach each other, both ways, on
  the policy's ports and nowhere else.

Policies are additive (a union of allows): the default deny cannot be weakened by order,
and nothing here can deny what another policy in the namespace allows. The gaps are named
in docs/net-targets.md: no explicit deny, no logging of what is dropped, pods with
``hostNetwork: true`` are outside NetworkPolicy (undefined by the API, unenforced by most
CNIs: ``host_network_pods`` finds them so that the caller refuses them), and nothing is
enforced unless the cluster's CNI implements NetworkPolicy (Calico, Cilium; not flannel).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from dolmen.frozen import frozen
from dolmen.net.model import Policy, Ports

API_VERSION = "networking.k8s.io/v1"
JOB_LABEL = "dolmen.io/job"  # the pods' label (jobs.kubernetes.pod.LABEL; a test holds them equal)
MANAGED = {"app.kubernetes.io/managed-by": "dolmen"}
DENY, DNS, MANAGEMENT = "dolmen-default-deny", "dolmen-allow-dns", "dolmen-allow-management"
PROTOCOLS = ("TCP", "UDP", "SCTP")
DNS_NAMESPACE = {"kubernetes.io/metadata.name": "kube-system"}  # set by the API server (1.21+)
DNS_PODS = {"k8s-app": "kube-dns"}


@frozen
class Port:
    """One port or range (``end``) of one protocol, as a NetworkPolicyPort."""

    protocol: str  # TCP, UDP, SCTP
    port: int
    end: int | None = None

    def as_k8s(self) -> dict[str, Any]:
        """The NetworkPolicyPort (``endPort``: GA since Kubernetes 1.25)."""
        out: dict[str, Any] = {"protocol": self.protocol, "port": self.port}
        if self.end is not None and self.end != self.port:
            out["endPort"] = self.end
        return out


@frozen
class JobNet:
    """What the objects of one job are made of: its namespace, the pods' label value, the
    ports its members use between themselves, and the management plane (CIDRs, ports)."""

    job: str  # a DNS-1123 label: the value of JOB_LABEL on its pods
    namespace: str
    ports: tuple[Port, ...]
    management: tuple[str, ...] = ()  # CIDRs ("10.0.0.0/24", "fd00::/64")
    management_ports: tuple[Port, ...] = ()


def _meta(name: str, namespace: str, **labels: str) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": {**MANAGED, **labels}}


def _policy(meta: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "NetworkPolicy", "metadata": meta, "spec": spec}


def namespace_policies(net: JobNet) -> list[dict[str, Any]]:
    """The objects every job of the namespace shares: default deny, DNS, management."""
    ns = net.namespace
    out = [
        _policy(_meta(DENY, ns), {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}),
        _policy(
            _meta(DNS, ns),
            {
                "podSelector": {},
                "policyTypes": ["Egress"],
                "egress": [
                    {
                        "to": [
                            {
                                "namespaceSelector": {"matchLabels": dict(DNS_NAMESPACE)},
                                "podSelector": {"matchLabels": dict(DNS_PODS)},
                            }
                        ],
                        "ports": [{"protocol": p, "port": 53} for p in ("UDP", "TCP")],
                    }
                ],
            },
        ),
    ]
    if net.management and net.management_ports:
        peers = [{"ipBlock": {"cidr": cidr}} for cidr in net.management]
        ports = [p.as_k8s() for p in net.management_ports]
        out.append(
            _policy(
                _meta(MANAGEMENT, ns),
                {
                    "podSelector": {"matchLabels": dict(MANAGED)},
                    "policyTypes": ["Ingress", "Egress"],
                    "ingress": [{"from": peers, "ports": ports}],
                    "egress": [{"to": peers, "ports": ports}],
                },
            )
        )
    return out


def job_policy(net: JobNet, *, label: str = JOB_LABEL) -> dict[str, Any]:
    """The job's own allow: its pods to and from each other on its ports."""
    peers = [{"podSelector": {"matchLabels": {label: net.job}}}]
    rule: dict[str, Any] = {"ports": [p.as_k8s() for p in net.ports]}
    return _policy(
        _meta(f"dolmen-job-{net.job}"[:63].rstrip("-"), net.namespace, **{label: net.job}),
        {
            "podSelector": {"matchLabels": {label: net.job}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": peers, **rule}],
            "egress": [{"to": peers, **rule}],
        },
    )


def network_policies(net: JobNet, *, label: str = JOB_LABEL) -> list[dict[str, Any]]:
    """Every object of ``net``'s job: the namespace's shared ones, then the job's."""
    return [*namespace_policies(net), job_policy(net, label=label)]


def _pod_specs(obj: Any, path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every pod spec inside a manifest (a Pod, any workload's templates, a JobSet's
    replicated jobs, a CronJob's job template): a mapping with ``containers``."""
    if isinstance(obj, Mapping):
        if isinstance(obj.get("containers"), list):
            yield path, obj
        for key, value in obj.items():
            yield from _pod_specs(value, f"{path}.{key}")
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from _pod_specs(value, f"{path}[{i}]")


def host_network_pods(objects: Sequence[Any]) -> list[str]:
    """``Kind/name: path`` of every pod spec with ``hostNetwork: true``: such pods share
    the node's network namespace, which no NetworkPolicy governs."""
    found: list[str] = []
    for obj in objects:
        if not isinstance(obj, Mapping):
            continue
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        who = f"{obj.get('kind', '?')}/{meta.get('name') or meta.get('generateName') or '?'}"
        found += [
            f"{who}: {path or 'spec'}"
            for path, spec in _pod_specs(obj, "")
            if spec.get("hostNetwork") is True
        ]
    return found


def _ports(ports: Ports) -> tuple[Port, ...]:
    return tuple(
        Port(proto, r.first, r.last if r.last != r.first else None)
        for proto, ranges in (("TCP", ports.tcp), ("UDP", ports.udp))
        for r in ranges
    )


def job_net(
    policy: Policy,
    job: str,
    namespace: str,
    *,
    tenant: str | None = None,
    extra: Sequence[Port] = (),
) -> JobNet:
    """A job's objects' inputs from the policy: its tenant's ports (plus ``extra``: the
    backend's own rendezvous port), the management plane's sources and ports. ValueError
    for a tenant the policy does not declare."""
    if tenant is not None and tenant not in policy.tenants:
        known = ", ".join(sorted(policy.tenants)) or "(none declared)"
        raise ValueError(f"tenant {tenant!r} is not in the policy; tenants: {known}")
    ports = tuple(dict.fromkeys([*_ports(policy.ports_for(tenant)), *extra]))
    mgmt = policy.management
    return JobNet(job, namespace, ports, tuple(str(a) for a in mgmt.allow_from), _ports(mgmt.ports))
