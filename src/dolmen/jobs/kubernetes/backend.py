"""The Kubernetes backend: render (``jobset``, ``manifests``) then apply with the official client.

The workload is a JobSet (whole-group restarts) unless the job file says ``workload =
"job"``, the backend is made with ``workload="job"``, or the cluster does not serve
``jobset.x-k8s.io`` (asked at submit through API discovery; ``plan`` assumes JobSet).
Job ids are the names the API server generated. ``plan`` needs nothing.

Everything else needs a kubeconfig (``kubeconfig=``,
``$KUBECONFIG``, ``~/.kube/config``, or the in-cluster service account) and the
``kubernetes`` package (``pip install 'dolmen[kubernetes]'``), imported only then;
without a kubeconfig they say so in one line (ServiceUnavailable, exit 3). The
namespace is ``namespace=``, else the job's account, else ``default``; GPU quotas
are a ResourceQuota in the namespace named after the group (or user).

Where the site has a network policy (``net_policy=``, else ``[net] policy`` of dolmen.toml)
the manifests gain the namespace's NetworkPolicy objects and the job's own
(``net.kubernetes``, docs/net-targets.md; the tenant is the job's account when the policy
declares it), created before the workload so that no pod runs unisolated; a pod with
``hostNetwork`` is refused (no NetworkPolicy governs it).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from dolmen.errors import UsageError
from dolmen.jobs.audit import change
from dolmen.jobs.backend import Backend, JobState, JobStatus, Option, Plan
from dolmen.jobs.kubernetes import jobset, manifests
from dolmen.jobs.kubernetes.api import api_errors, connect, module
from dolmen.jobs.kubernetes.isolation import apply_network_policy, isolation
from dolmen.jobs.kubernetes.status import (
    create_shared_service,
    job_status,
    jobset_status,
    served,
)
from dolmen.jobs.kubernetes.yamltext import dump_all
from dolmen.jobs.quota import QuotaExceeded, QuotaStore
from dolmen.jobs.spec import JobSpec

GROUP, VERSION = jobset.API_VERSION.split("/")
NAME_LABEL = jobset.NAME_LABEL
JOB_LABEL = "batch.kubernetes.io/job-name"
WORKLOADS = ("jobset", "job")


class KubernetesBackend(Backend):
    """Jobs as JobSets (or Indexed Jobs) on a Kubernetes cluster (module docstring)."""

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
        workload: str | None = None,
        net_policy: str | None = None,
    ) -> None:
        if workload not in (None, *WORKLOADS):
            raise UsageError(f"workload {workload!r}: valid: {', '.join(WORKLOADS)}")
        self.workload = workload
        self._served: bool | None = None  # does the cluster serve jobset.x-k8s.io?
        self.namespace = namespace
        self.kubeconfig = kubeconfig
        self.python = python
        self.checkpoint_claim = checkpoint_claim
        self._api: Any = None
        self.net_policy = net_policy

    def _ns(self, spec: JobSpec | None = None) -> str:
        return self.namespace or (spec.account if spec else None) or "default"

    def kind(self, spec: JobSpec) -> str:
        """``jobset`` or ``job``: the job file's choice, the backend's, else JobSet unless
        the cluster was seen not to serve it."""
        chosen = spec.kubernetes.workload or self.workload
        return chosen or ("job" if self._served is False else "jobset")

    def manifests(self, spec: JobSpec) -> list[dict[str, Any]]:
        """The objects ``submit`` creates, the workload first."""
        render = jobset.jobset_manifests if self.kind(spec) == "jobset" else manifests.job_manifests
        objects = render(
            spec,
            namespace=self._ns(spec),
            python=self.python,
            checkpoint_claim=self.checkpoint_claim,
        )
        return objects + isolation(self.net_policy, spec, objects, self._ns(spec))

    def plan(self, spec: JobSpec) -> Plan:
        spec.check()
        if not spec.image:
            raise UsageError("a kubernetes job needs --image", hint="e.g. --image nvcr.io/...")
        name = manifests.dns_name(spec.name)
        pods = f"{spec.nodes} pod(s) x {spec.gpus_per_node} {manifests.GPU}"
        if self.kind(spec) == "jobset":
            summary = (
                f"kubernetes: JobSet {name}-<generated> in namespace {self._ns(spec)}, {pods},"
                f" torchrun in the image; every pod restarts together, up to"
                f" {spec.max_restarts} time(s)"
            )
        else:
            summary = (
                f"kubernetes: Indexed Job {name}-<generated> in namespace {self._ns(spec)}, {pods},"
                f" headless Service {name}; up to {spec.max_restarts} restart(s) per pod"
            )
        return Plan(self.name, spec, {f"{name}.yaml": dump_all(self.manifests(spec))}, summary)

    def resolve(self, spec: JobSpec) -> JobSpec:
        """Ask the cluster whether it serves JobSet (when nothing chose), and make a
        Volcano job's name unique (its PodGroup is named before the workload)."""
        if not (spec.kubernetes.workload or self.workload) and self._served is None:
            self._served = served(self.api(), GROUP)
        if spec.kubernetes.gang == "volcano":
            import secrets

            # cut first: the suffix must survive dns_name's cut to jobset.PREFIX_MAX
            base = spec.name[: jobset.PREFIX_MAX - 6].rstrip("-._") or "job"
            spec = replace(spec, name=f"{base}-{secrets.token_hex(3)[:5]}")
        return spec

    # --- the API ---------------------------------------------------------------------
    def api(self) -> Any:
        """An ApiClient; ServiceUnavailable when there is no kubeconfig or no client."""
        if self._api is None:
            self._api = connect(self.kubeconfig)
        return self._api

    # --- submit (Backend.submit runs these in order) ---------------------------------
    def preflight(self, plan: Plan) -> None:
        """A reachable API server that serves the workload, and room in the GPU quota."""
        api = self.api()
        if self.kind(plan.spec) == "jobset" and not served(api, GROUP):
            raise UsageError(
                "this cluster does not serve JobSet (jobset.x-k8s.io)",
                hint="install JobSet (github.com/kubernetes-sigs/jobset), or workload = 'job'"
                " in [kubernetes] of the job file",
            )
        self._check_quota(plan.spec, self._ns(plan.spec))

    def schedule(self, plan: Plan) -> JobStatus:
        """Create the workload, then what it owns (the Indexed Job's shared Service,
        Volcano's PodGroup) with an ownerReference to it."""
        objects = self.manifests(plan.spec)
        policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
        workload, *rest = [o for o in objects if o["kind"] != "NetworkPolicy"]
        ns = self._ns(plan.spec)
        k = module("kubernetes.client")
        api = self.api()
        with api_errors():
            for obj in policies:  # before the workload: no pod starts unisolated
                apply_network_policy(k.NetworkingV1Api(api), ns, obj)
            if workload["kind"] == "JobSet":
                created = k.CustomObjectsApi(api).create_namespaced_custom_object(
                    GROUP, VERSION, ns, "jobsets", workload
                )
            else:
                job = k.BatchV1Api(api).create_namespaced_job(ns, workload)
                created = api.sanitize_for_serialization(job)
            for obj in rest:
                if obj["kind"] == "Service":
                    create_shared_service(k.CoreV1Api(api), ns, obj)
                else:  # Volcano's PodGroup
                    group, version = obj["apiVersion"].split("/")
                    k.CustomObjectsApi(api).create_namespaced_custom_object(
                        group, version, ns, "podgroups", manifests.owned(obj, created)
                    )
        name = created["metadata"]["name"]
        details = {"namespace": ns, "workload": workload["kind"]}
        return JobStatus(name, plan.spec.name, self.name, JobState.PENDING, details=details)

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
        found = self._jobset(job_id)
        if found is not None:
            return jobset_status(found)
        with api_errors():
            job = k.BatchV1Api(api).read_namespaced_job(job_id, self._ns())
        return job_status(job)

    def list(self) -> list[JobStatus]:
        api = self.api()
        k = module("kubernetes.client")
        rows: list[JobStatus] = []
        with api_errors():
            if served(api, GROUP):
                sets = k.CustomObjectsApi(api).list_namespaced_custom_object(
                    GROUP, VERSION, self._ns(), "jobsets", label_selector=manifests.LABEL
                )
                rows += [jobset_status(js) for js in sets.get("items", [])]
            jobs = k.BatchV1Api(api).list_namespaced_job(self._ns(), label_selector=manifests.LABEL)
        # a JobSet's own Jobs carry its labels: list the set once, not its Jobs too
        rows += [job_status(j) for j in jobs.items if not (j.metadata.labels or {}).get(NAME_LABEL)]
        return sorted(rows, key=lambda s: s.details.get("created", ""), reverse=True)

    def _jobset(self, job_id: str) -> dict[str, Any] | None:
        """The JobSet named ``job_id``, None when there is none (or no JobSet at all)."""
        api = self.api()
        if not served(api, GROUP):
            return None
        k = module("kubernetes.client")
        try:
            with api_errors():
                found = k.CustomObjectsApi(api).get_namespaced_custom_object(
                    GROUP, VERSION, self._ns(), "jobsets", job_id
                )
        except UsageError:  # 404: a Job, or nothing (status then says which)
            return None
        return dict(found)

    def cancel(self, job_id: str) -> JobStatus:
        before = self.status(job_id)
        k = module("kubernetes.client")

        target = f"job {self._ns()}/{job_id}"
        with change("jobs.cancel", target, {"backend": self.name}), api_errors():
            if before.details.get("workload") == "JobSet":
                k.CustomObjectsApi(self.api()).delete_namespaced_custom_object(
                    GROUP, VERSION, self._ns(), "jobsets", job_id, propagation_policy="Foreground"
                )
            else:  # the Service is shared by the jobs of one name and stays
                k.BatchV1Api(self.api()).delete_namespaced_job(
                    job_id, self._ns(), propagation_policy="Foreground"
                )
        return JobStatus(before.job_id, before.name, self.name, JobState.CANCELLED, before.restarts)

    def logs(self, job_id: str, *, rank: int | None = None, follow: bool = False) -> Iterator[str]:
        api = self.api()
        k = module("kubernetes.client")

        core = k.CoreV1Api(api)
        key = NAME_LABEL if self.status(job_id).details.get("workload") == "JobSet" else JOB_LABEL
        with api_errors():
            pods = core.list_namespaced_pod(self._ns(), label_selector=f"{key}={job_id}")
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
