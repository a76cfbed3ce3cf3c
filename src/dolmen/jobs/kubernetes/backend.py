"""The Kubernetes backend: render (``manifests``) then apply with the official client.

``plan`` needs nothing. Everything else needs a kubeconfig (``kubeconfig=``,
``$KUBECONFIG``, ``~/.kube/config``, or the in-cluster service account) and the
``kubernetes`` package (``pip install 'dolmen[kubernetes]'``), imported only then;
without a kubeconfig they say so in one line (ServiceUnavailable, exit 3). The
namespace is ``namespace=``, else the job's account, else ``default``; GPU quotas
are a ResourceQuota in the namespace named after the group (or user).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dolmen.errors import UsageError
from dolmen.jobs.audit import change
from dolmen.jobs.backend import Backend, JobState, JobStatus, Option, Plan
from dolmen.jobs.kubernetes import manifests
from dolmen.jobs.kubernetes.api import api_errors, connect, module
from dolmen.jobs.kubernetes.yamltext import dump_all
from dolmen.jobs.quota import QuotaExceeded, QuotaStore
from dolmen.jobs.spec import JobSpec


class KubernetesBackend(Backend):
    """Jobs as Indexed Jobs on a Kubernetes cluster (module docstring)."""

    name = "kubernetes"
    OPTIONS = (
        Option(
            "namespace",
            "the namespace (default: the job's account, else default)",
            flag="--namespace",
            metavar="NAME",
        ),
        Option(
            "kubeconfig",
            "the kubeconfig file (default: $KUBECONFIG, ~/.kube/config)",
            flag="--kubeconfig",
            metavar="FILE",
        ),
    )

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
        return manifests.job_manifests(
            spec,
            namespace=self._ns(spec),
            python=self.python,
            checkpoint_claim=self.checkpoint_claim,
        )

    def plan(self, spec: JobSpec) -> Plan:
        spec.check()
        if not spec.image:
            raise UsageError("a kubernetes job needs --image", hint="e.g. --image nvcr.io/...")
        name = manifests.dns_name(spec.name)
        summary = (
            f"kubernetes: Indexed Job {name} in namespace {self._ns(spec)}, {spec.nodes} pod(s)"
            f" x {spec.gpus_per_node} {manifests.GPU}, headless Service {name} (MASTER_ADDR"
            f" {name}-0.{name}), up to {spec.max_restarts} restart(s) per pod"
        )
        return Plan(self.name, spec, {f"{name}.yaml": dump_all(self.manifests(spec))}, summary)

    # --- the API ---------------------------------------------------------------------
    def api(self) -> Any:
        """An ApiClient; ServiceUnavailable when there is no kubeconfig or no client."""
        if self._api is None:
            self._api = connect(self.kubeconfig)
        return self._api

    # --- submit (Backend.submit runs these in order) ---------------------------------
    def preflight(self, plan: Plan) -> None:
        """A reachable API server, and room in the namespace's GPU quota."""
        self.api()
        self._check_quota(plan.spec, self._ns(plan.spec))

    def schedule(self, plan: Plan) -> JobStatus:
        service, job = self.manifests(plan.spec)
        ns = self._ns(plan.spec)
        k = module("kubernetes.client")
        with api_errors():
            k.CoreV1Api(self.api()).create_namespaced_service(ns, service)
            k.BatchV1Api(self.api()).create_namespaced_job(ns, job)
        name = job["metadata"]["name"]
        return JobStatus(name, name, self.name, JobState.PENDING, details={"namespace": ns})

    def submitted(self, status: JobStatus, plan: Plan) -> JobStatus:
        """The job as the API server has it now."""
        return self.status(status.job_id)

    def _check_quota(self, spec: JobSpec, ns: str) -> None:
        """Refuse up front what the namespace's ResourceQuota would refuse pod by pod
        (the Job object itself would be accepted, its pods never created)."""
        if not spec.total_gpus:
            return
        k = module("kubernetes.client")

        with api_errors():
            try:
                q = k.CoreV1Api(self.api()).read_namespaced_resource_quota(manifests.QUOTA_NAME, ns)
            except k.exceptions.ApiException as e:
                if e.status == 404:
                    return
                raise
        key = f"requests.{manifests.GPU}"
        hard = str((q.spec.hard or {}).get(key))
        used = str(((q.status and q.status.used) or {}).get(key, "0"))
        if hard.isdigit() and used.isdigit() and int(used) + spec.total_gpus > int(hard):
            raise QuotaExceeded(
                f"group {ns}: {spec.total_gpus} GPUs requested, {used} in use of a limit of {hard}"
            )

    def status(self, job_id: str) -> JobStatus:
        api = self.api()
        k = module("kubernetes.client")

        with api_errors():
            job = k.BatchV1Api(api).read_namespaced_job(job_id, self._ns())
        return _status(job)

    def list(self) -> list[JobStatus]:
        api = self.api()
        k = module("kubernetes.client")

        with api_errors():
            jobs = k.BatchV1Api(api).list_namespaced_job(self._ns(), label_selector=manifests.LABEL)
        rows = [_status(j) for j in jobs.items]
        return sorted(rows, key=lambda s: s.details.get("created", ""), reverse=True)

    def cancel(self, job_id: str) -> JobStatus:
        before = self.status(job_id)
        k = module("kubernetes.client")

        target = f"job {self._ns()}/{job_id}"
        with change("jobs.cancel", target, {"backend": self.name}), api_errors():
            k.BatchV1Api(self.api()).delete_namespaced_job(
                job_id, self._ns(), propagation_policy="Foreground"
            )
            k.CoreV1Api(self.api()).delete_namespaced_service(job_id, self._ns())
        return JobStatus(before.job_id, before.name, self.name, JobState.CANCELLED, before.restarts)

    def logs(self, job_id: str, *, rank: int | None = None, follow: bool = False) -> Iterator[str]:
        api = self.api()
        k = module("kubernetes.client")

        core = k.CoreV1Api(api)
        with api_errors():
            pods = core.list_namespaced_pod(
                self._ns(), label_selector=f"{manifests.LABEL}={job_id}"
            )
        for pod in pods.items:
            index = (pod.metadata.annotations or {}).get(
                "batch.kubernetes.io/job-completion-index", "?"
            )
            if rank is not None and str(rank) != index:
                continue
            with api_errors():
                text = core.read_namespaced_pod_log(pod.metadata.name, self._ns())
            for line in str(text).splitlines():
                yield line if rank is not None else f"[node {index}] {line}"

    def quotas(self) -> QuotaStore:
        from dolmen.jobs.kubernetes.quota import KubernetesQuotas

        return KubernetesQuotas(self)


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
