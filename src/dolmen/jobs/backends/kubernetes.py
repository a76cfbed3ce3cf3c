"""The Kubernetes backend: render (``jobs.kube``) then apply with the official client.

``plan`` needs nothing. Everything else needs a kubeconfig (``kubeconfig=``,
``$KUBECONFIG``, ``~/.kube/config``, or the in-cluster service account) and the
``kubernetes`` package (``pip install 'dolmen[kubernetes]'``), imported only then;
without a kubeconfig they say so in one line (ServiceUnavailable, exit 3). The
namespace is ``namespace=``, else the job's account, else ``default``; GPU quotas
are a ResourceQuota in the namespace named after the group (or user).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dolmen.errors import DolmenError, ServiceUnavailable, UsageError
from dolmen.jobs import kube
from dolmen.jobs.audit import audit
from dolmen.jobs.backends.base import Backend, JobState, JobStatus, Plan
from dolmen.jobs.quota import Kind, Quota, QuotaExceeded, QuotaStore, Subject, User
from dolmen.jobs.spec import JobSpec
from dolmen.jobs.yamltext import dump, dump_all


class KubernetesBackend(Backend):
    """Jobs as Indexed Jobs on a Kubernetes cluster (module docstring)."""

    name = "kubernetes"

    def __init__(
        self,
        *,
        namespace: str | None = None,
        kubeconfig: str | None = None,
        python: str = "python3",
        checkpoint_claim: str = "dolmen-checkpoints",
    ) -> None:
        self.namespace = namespace
        self.kubeconfig = kubeconfig
        self.python = python
        self.checkpoint_claim = checkpoint_claim
        self._api: Any = None

    def _ns(self, spec: JobSpec | None = None) -> str:
        return self.namespace or (spec.account if spec else None) or "default"

    def manifests(self, spec: JobSpec) -> list[dict[str, Any]]:
        """The Service and Indexed Job that ``submit`` applies."""
        return kube.job_manifests(
            spec,
            namespace=self._ns(spec),
            python=self.python,
            checkpoint_claim=self.checkpoint_claim,
        )

    def plan(self, spec: JobSpec) -> Plan:
        spec.check()
        if not spec.image:
            raise UsageError("a kubernetes job needs --image", hint="e.g. --image nvcr.io/...")
        name = kube.dns_name(spec.name)
        summary = (
            f"kubernetes: Indexed Job {name} in namespace {self._ns(spec)}, {spec.nodes} pod(s)"
            f" x {spec.gpus_per_node} {kube.GPU}, headless Service {name} (MASTER_ADDR"
            f" {name}-0.{name}), up to {spec.max_restarts} restart(s) per pod"
        )
        return Plan(self.name, spec, {f"{name}.yaml": dump_all(self.manifests(spec))}, summary)

    # --- the API ---------------------------------------------------------------------
    def api(self) -> Any:
        """An ApiClient; ServiceUnavailable when there is no kubeconfig or no client."""
        if self._api is not None:
            return self._api
        config_file = find_kubeconfig(self.kubeconfig)
        in_cluster = bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
        if config_file is None and not in_cluster:
            raise ServiceUnavailable(
                "no kubeconfig: cannot reach a Kubernetes API server",
                hint="pass --kubeconfig FILE or set KUBECONFIG; `dolmen jobs plan` works without",
            )
        try:
            client, config = _module("kubernetes.client"), _module("kubernetes.config")
        except ImportError:
            raise ServiceUnavailable(
                "the kubernetes client is not installed",
                hint="pip install 'dolmen[kubernetes]'",
            ) from None
        try:
            if config_file is not None:
                config.load_kube_config(config_file=str(config_file))
            else:
                config.load_incluster_config()
        except Exception as e:  # the client raises ConfigException and plain errors alike
            raise ServiceUnavailable(f"kubeconfig {config_file} is not usable: {e}") from None
        self._api = client.ApiClient()
        return self._api

    def submit(self, spec: JobSpec) -> JobStatus:
        self.plan(spec)
        api = self.api()
        k = _module("kubernetes.client")

        service, job = self.manifests(spec)
        ns = self._ns(spec)
        self._check_quota(spec, ns)
        audit(
            "jobs.submit",
            f"job {ns}/{job['metadata']['name']}",
            details={
                "backend": self.name,
                "nodes": spec.nodes,
                "gpus_per_node": spec.gpus_per_node,
            },
        )
        with _api_errors():
            k.CoreV1Api(api).create_namespaced_service(ns, service)
            k.BatchV1Api(api).create_namespaced_job(ns, job)
        return self.status(job["metadata"]["name"])

    def _check_quota(self, spec: JobSpec, ns: str) -> None:
        """Refuse up front what the namespace's ResourceQuota would refuse pod by pod
        (the Job object itself would be accepted, its pods never created)."""
        if not spec.total_gpus:
            return
        k = _module("kubernetes.client")

        with _api_errors():
            try:
                q = k.CoreV1Api(self.api()).read_namespaced_resource_quota(kube.QUOTA_NAME, ns)
            except k.exceptions.ApiException as e:
                if e.status == 404:
                    return
                raise
        key = f"requests.{kube.GPU}"
        hard = str((q.spec.hard or {}).get(key))
        used = str(((q.status and q.status.used) or {}).get(key, "0"))
        if hard.isdigit() and used.isdigit() and int(used) + spec.total_gpus > int(hard):
            raise QuotaExceeded(
                f"group {ns}: {spec.total_gpus} GPUs requested, {used} in use of a limit of {hard}"
            )

    def status(self, job_id: str) -> JobStatus:
        api = self.api()
        k = _module("kubernetes.client")

        with _api_errors():
            job = k.BatchV1Api(api).read_namespaced_job(job_id, self._ns())
        return _status(job)

    def list(self) -> list[JobStatus]:
        api = self.api()
        k = _module("kubernetes.client")

        with _api_errors():
            jobs = k.BatchV1Api(api).list_namespaced_job(self._ns(), label_selector=kube.LABEL)
        rows = [_status(j) for j in jobs.items]
        return sorted(rows, key=lambda s: s.details.get("created", ""), reverse=True)

    def cancel(self, job_id: str) -> JobStatus:
        before = self.status(job_id)
        k = _module("kubernetes.client")

        audit("jobs.cancel", f"job {self._ns()}/{job_id}", details={"backend": self.name})
        with _api_errors():
            k.BatchV1Api(self.api()).delete_namespaced_job(
                job_id, self._ns(), propagation_policy="Foreground"
            )
            k.CoreV1Api(self.api()).delete_namespaced_service(job_id, self._ns())
        return JobStatus(before.job_id, before.name, self.name, JobState.CANCELLED, before.restarts)

    def logs(self, job_id: str, *, rank: int | None = None, follow: bool = False) -> Iterator[str]:
        api = self.api()
        k = _module("kubernetes.client")

        core = k.CoreV1Api(api)
        with _api_errors():
            pods = core.list_namespaced_pod(self._ns(), label_selector=f"{kube.LABEL}={job_id}")
        for pod in pods.items:
            index = (pod.metadata.annotations or {}).get(
                "batch.kubernetes.io/job-completion-index", "?"
            )
            if rank is not None and str(rank) != index:
                continue
            with _api_errors():
                text = core.read_namespaced_pod_log(pod.metadata.name, self._ns())
            for line in str(text).splitlines():
                yield line if rank is not None else f"[node {index}] {line}"

    def quotas(self) -> QuotaStore:
        return KubernetesQuotas(self)


class KubernetesQuotas(QuotaStore):
    """GPU quotas as one ResourceQuota per namespace; a group's (or user's) namespace is
    its name. Users themselves live in the cluster's identity provider, not here."""

    backend = "kubernetes"

    def __init__(self, backend: KubernetesBackend) -> None:
        self.k8s = backend

    def render(self, subject: Subject, gpus: int) -> str:
        """The ResourceQuota ``set_quota`` applies (``dolmen quota set --dry-run``)."""
        return dump(kube.resource_quota(subject.name, gpus))

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
        k = _module("kubernetes.client")

        core = k.CoreV1Api(api)
        body = kube.resource_quota(subject.name, gpus)
        with _api_errors():
            try:
                core.replace_namespaced_resource_quota(kube.QUOTA_NAME, subject.name, body)
            except k.exceptions.ApiException as e:
                if e.status != 404:
                    raise
                core.create_namespaced_resource_quota(subject.name, body)

    def remove_quota(self, subject: Subject) -> bool:
        api = self.k8s.api()
        k = _module("kubernetes.client")

        with _api_errors():
            try:
                k.CoreV1Api(api).delete_namespaced_resource_quota(kube.QUOTA_NAME, subject.name)
            except k.exceptions.ApiException as e:
                if e.status == 404:
                    return False
                raise
        return True

    def quotas(self) -> list[Quota]:
        api = self.k8s.api()
        k = _module("kubernetes.client")

        with _api_errors():
            items = k.CoreV1Api(api).list_resource_quota_for_all_namespaces(
                field_selector=f"metadata.name={kube.QUOTA_NAME}"
            )
        out = []
        for q in items.items:
            hard = (q.spec.hard or {}).get(f"requests.{kube.GPU}")
            if hard is not None and str(hard).isdigit():
                out.append(Quota(Subject(Kind.GROUP, q.metadata.namespace), int(hard)))
        return out

    def usage(self, subject: Subject) -> int:
        api = self.k8s.api()
        k = _module("kubernetes.client")

        with _api_errors():
            q = k.CoreV1Api(api).read_namespaced_resource_quota(kube.QUOTA_NAME, subject.name)
        used = ((q.status and q.status.used) or {}).get(f"requests.{kube.GPU}", "0")
        return int(used) if str(used).isdigit() else 0


_NO_USERS = (
    "kubernetes keeps its users in the cluster's identity provider; dolmen manages only"
    " namespace GPU quotas there (dolmen quota set --backend kubernetes --group NS)"
)


def find_kubeconfig(explicit: str | None = None) -> Path | None:
    """The kubeconfig to use: ``explicit``, the first existing file of $KUBECONFIG, or
    ~/.kube/config; None when there is none."""
    candidates: list[str] = []
    if explicit:
        candidates.append(explicit)
    else:
        candidates += [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
        candidates.append(str(Path.home() / ".kube" / "config"))
    for c in candidates:
        path = Path(c).expanduser()
        if path.is_file():
            return path
    if explicit:
        raise UsageError(f"no such kubeconfig: {explicit}")
    return None


def _module(name: str) -> Any:
    """The official client, imported only when a command needs the API (an optional extra,
    typed loosely so that dolmen type-checks the same with or without it installed)."""
    import importlib

    return importlib.import_module(name)


@contextmanager
def _api_errors() -> Iterator[None]:
    """Turn the client's errors into one line: quota refusals, refusals, dead API server."""
    try:
        yield
    except DolmenError:
        raise
    except Exception as exc:
        status = getattr(exc, "status", None)
        reason = getattr(exc, "reason", None) or str(exc).splitlines()[0]
        body = str(getattr(exc, "body", "") or "")
        if status == 403 and "exceeded quota" in body:
            raise QuotaExceeded(f"kubernetes refused the job: {_message(body)}") from None
        if status == 404:
            raise UsageError(f"kubernetes: not found: {_message(body) or reason}") from None
        if isinstance(status, int) and 400 <= status < 500:
            raise UsageError(f"kubernetes refused: {status} {_message(body) or reason}") from None
        raise ServiceUnavailable(f"kubernetes API server: {reason}") from None


def _message(body: str) -> str:
    import json

    try:
        return str(json.loads(body).get("message", ""))
    except (ValueError, AttributeError):
        return body[:200]


def _status(job: Any) -> JobStatus:
    st = job.status
    conditions = {c.type: c for c in (st.conditions or []) if c.status == "True"}
    if "Complete" in conditions:
        state, reason = JobState.COMPLETED, ""
    elif "Failed" in conditions:
        state, reason = JobState.FAILED, str(conditions["Failed"].message or "")
    elif st.active:
        state, reason = JobState.RUNNING, ""
    else:
        state, reason = JobState.PENDING, ""
    created = job.metadata.creation_timestamp
    return JobStatus(
        job_id=job.metadata.name,
        name=job.metadata.name,
        backend="kubernetes",
        state=state,
        restarts=int(st.failed or 0),
        reason=reason,
        details={
            "namespace": job.metadata.namespace,
            "created": created.isoformat() if created else "",
            "active": str(st.active or 0),
            "succeeded": str(st.succeeded or 0),
        },
    )
