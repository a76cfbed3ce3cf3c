"""What the API server says of a job: JobSet and Job objects as JobStatus, API discovery."""

from __future__ import annotations

from typing import Any

from dolmen.jobs.backend import JobState, JobStatus
from dolmen.jobs.kubernetes import manifests
from dolmen.jobs.kubernetes.api import api_errors, module


def served(api: Any, group: str) -> bool:
    """Whether the API server serves ``group`` (API discovery, which every user may read)."""
    k = module("kubernetes.client")
    with api_errors():
        groups = k.ApisApi(api).get_api_versions().groups or []
    return any(g.name == group for g in groups)


def create_shared_service(core: Any, ns: str, service: dict[str, Any]) -> None:
    """The headless Service of an Indexed Job; one already there (a job of the same
    name) is the same object and serves this one too."""
    try:
        core.create_namespaced_service(ns, service)
    except Exception as e:
        if getattr(e, "status", None) != 409:
            raise


def jobset_status(js: dict[str, Any]) -> JobStatus:
    """A JobStatus from a JobSet object (its conditions and restart count)."""
    meta, st = js.get("metadata", {}), js.get("status") or {}
    conditions = {c.get("type"): c for c in st.get("conditions") or [] if c.get("status") == "True"}
    if "Completed" in conditions:
        state, reason = JobState.COMPLETED, ""
    elif "Failed" in conditions:
        state, reason = JobState.FAILED, str(conditions["Failed"].get("message") or "")
    elif "Suspended" in conditions:
        state, reason = JobState.PENDING, "suspended (waiting for admission)"
    elif st.get("restarts"):
        state, reason = JobState.RUNNING, ""
    else:
        state, reason = JobState.RUNNING if st.get("replicatedJobsStatus") else JobState.PENDING, ""
    return JobStatus(
        job_id=str(meta.get("name", "")),
        name=str((meta.get("labels") or {}).get(manifests.LABEL, meta.get("name", ""))),
        backend="kubernetes",
        state=state,
        restarts=int(st.get("restarts") or 0),
        reason=reason,
        details={
            "namespace": str(meta.get("namespace", "")),
            "created": str(meta.get("creationTimestamp", "")),
            "workload": "JobSet",
        },
    )


def job_status(job: Any) -> JobStatus:
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
            "workload": "Job",
        },
    )
