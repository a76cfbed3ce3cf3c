"""GPU quotas on Kubernetes: one ResourceQuota per namespace (``dolmen quota --backend
kubernetes``); users live in the cluster's identity provider, not here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dolmen.errors import UsageError
from dolmen.jobs.kubernetes import manifests
from dolmen.jobs.kubernetes.api import api_errors, module
from dolmen.jobs.kubernetes.yamltext import dump
from dolmen.jobs.quota import Kind, Quota, QuotaStore, Subject, User

if TYPE_CHECKING:
    from dolmen.jobs.kubernetes.backend import KubernetesBackend


class KubernetesQuotas(QuotaStore):
    """GPU quotas as one ResourceQuota per namespace; a group's (or user's) namespace is
    its name. Users themselves live in the cluster's identity provider, not here."""

    backend = "kubernetes"

    def __init__(self, backend: KubernetesBackend) -> None:
        self.k8s = backend

    def render(self, subject: Subject, gpus: int) -> str:
        """The ResourceQuota ``set_quota`` applies (``dolmen quota set --dry-run``)."""
        return dump(manifests.resource_quota(subject.name, gpus))

    def validate_user(self, name: str, groups: Sequence[str]) -> None:
        raise UsageError(_NO_USERS)

    def add_user(self, name: str, groups: Sequence[str]) -> User:
        raise UsageError(_NO_USERS)

    def remove_user(self, name: str) -> bool:
        raise UsageError(_NO_USERS)

    def users(self) -> list[User]:
        raise UsageError(_NO_USERS)

    def groups_of(self, user: str) -> tuple[str, ...]:
        return ()

    def set_quota(self, subject: Subject, gpus: int) -> None:
        api = self.k8s.api()
        k = module("kubernetes.client")

        core = k.CoreV1Api(api)
        body = manifests.resource_quota(subject.name, gpus)
        with api_errors():
            try:
                core.replace_namespaced_resource_quota(manifests.QUOTA_NAME, subject.name, body)
            except k.exceptions.ApiException as e:
                if e.status != 404:
                    raise
                core.create_namespaced_resource_quota(subject.name, body)

    def remove_quota(self, subject: Subject) -> bool:
        api = self.k8s.api()
        k = module("kubernetes.client")

        with api_errors():
            try:
                k.CoreV1Api(api).delete_namespaced_resource_quota(
                    manifests.QUOTA_NAME, subject.name
                )
            except k.exceptions.ApiException as e:
                if e.status == 404:
                    return False
                raise
        return True

    def quotas(self) -> list[Quota]:
        api = self.k8s.api()
        k = module("kubernetes.client")

        with api_errors():
            items = k.CoreV1Api(api).list_resource_quota_for_all_namespaces(
                field_selector=f"metadata.name={manifests.QUOTA_NAME}"
            )
        out = []
        for q in items.items:
            hard = (q.spec.hard or {}).get(f"requests.{manifests.GPU}")
            if hard is not None and str(hard).isdigit():
                out.append(Quota(Subject(Kind.GROUP, q.metadata.namespace), int(hard)))
        return out

    def usage(self, subject: Subject) -> int:
        api = self.k8s.api()
        k = module("kubernetes.client")

        with api_errors():
            q = k.CoreV1Api(api).read_namespaced_resource_quota(manifests.QUOTA_NAME, subject.name)
        used = ((q.status and q.status.used) or {}).get(f"requests.{manifests.GPU}", "0")
        return int(used) if str(used).isdigit() else 0


_NO_USERS = (
    "kubernetes keeps its users in the cluster's identity provider; dolmen manages only"
    " namespace GPU quotas there (dolmen quota set --backend kubernetes --group NS)"
)
