"""The writes of the API: drain, resume, job cancel, tune apply, each through the code
path its command uses, each an audit event carrying the token's principal.

Every write is two events (STYLE.md rule 20): the intent (``outcome="unknown"``,
``phase: intent``) recorded fail closed: when the audit log cannot be written the write is
refused (AuditUnavailable, 503) and nothing changes; then the outcome (success, or failure
with the error) after the change. The code paths underneath record their own events too
(``nodes.drain`` by slurm/events.py, ``jobs.cancel`` by the jobs backend, ``tune.apply``
by the engine) with this process as actor; the ``serve.*`` pair says who asked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from dolmen.errors import UsageError
from dolmen.host import Host

T = TypeVar("T")


def audited(
    action: str,
    target: str,
    details: Mapping[str, Any],
    principal: str | None,
    do: Callable[[], T],
) -> T:
    """Intent (fail closed), ``do()``, outcome: what ``do`` returned. ``principal`` None:
    the person running the command (audit/actor.py)."""
    from dolmen.audit import record_event

    record_event(
        action, target, outcome="unknown", details={"phase": "intent", **details}, actor=principal
    )
    try:
        result = do()
    except BaseException as e:
        why = getattr(e, "message", None) or str(e)
        record_event(
            action,
            target,
            outcome="failure",
            details={"phase": "outcome", "error": why, **details},
            actor=principal,
        )
        raise
    record_event(action, target, details={"phase": "outcome", **details}, actor=principal)
    return result


def node_name(host: Host) -> str:
    """This node's Slurm name: ``$SLURMD_NODENAME``, else the host's name (as drain.py)."""
    return host.environ().get("SLURMD_NODENAME") or host.hostname


def drain(host: Host, reason: str, principal: str) -> dict[str, Any]:
    """Drain this node in Slurm with a person's reason (never one starting ``dolmen:``,
    which ``validate --slurm`` would resume on the next healthy run)."""
    from dolmen.report.reason import PREFIX
    from dolmen.slurm.client import SlurmClient

    reason = " ".join(reason.split())
    if not reason or reason.startswith(PREFIX) or len(reason) > 200:
        raise UsageError(
            f"a drain reason is 1 to 200 characters and does not start with {PREFIX!r}",
            hint="say why a person drains the node: validate --slurm never resumes it then",
        )
    client = SlurmClient(host)
    name = node_name(host)
    details = {"node": name, "reason": reason}
    audited(
        "serve.node.drain", f"node:{name}", details, principal,
        lambda: client.set_node(name, "drain", reason),
    )  # fmt: skip
    return {"node": name, "action": "drain", "reason": reason}


def resume(host: Host, principal: str) -> dict[str, Any]:
    """Resume this node in Slurm."""
    from dolmen.slurm.client import SlurmClient

    client = SlurmClient(host)
    name = node_name(host)
    audited(
        "serve.node.resume", f"node:{name}", {"node": name}, principal,
        lambda: client.set_node(name, "resume"),
    )  # fmt: skip
    return {"node": name, "action": "resume"}


def cancel_job(state: str | None, job_id: str, principal: str) -> dict[str, Any]:
    """Cancel a job of the local backend (``dolmen jobs cancel``)."""
    from dolmen.jobs.local.backend import LocalBackend

    backend = LocalBackend(state)
    backend.status(job_id)  # an unknown id: UsageError before any event
    st = audited(
        "serve.jobs.cancel", f"job:local/{job_id}", {"job": job_id}, principal,
        lambda: backend.cancel(job_id),
    )  # fmt: skip
    return {"job_id": st.job_id, "state": st.state.value, "reason": st.reason}


def tune_apply(host: Host, profile: str, principal: str) -> dict[str, Any]:
    """Apply a profile (``dolmen tune apply --yes``) where no choice is needed: a host with
    an interrupted change or another active profile is refused (409) and sent to the CLI,
    which asks what to do with them."""
    from dolmen.tune.engine import apply_plan, require_root
    from dolmen.tune.planner import plan_profile
    from dolmen.tune.profile import load_profile
    from dolmen.tune.verify import tune_status

    prof = load_profile(profile)
    if prof.read_only:
        raise UsageError(f"{prof.name} is a read-only reference of stock values")
    st = tune_status(host)
    if st.interrupted or (st.active is not None and st.active != prof.name):
        why = "an interrupted change" if st.interrupted else f"{st.active} active"
        raise Conflict(
            f"{host.hostname} has {why}: run `dolmen tune apply {prof.name}` there, "
            "which says what happens to it"
        )
    plan = plan_profile(host, prof)
    if not plan.steps:
        return {"profile": prof.name, "changed": 0, "note": "the host holds it: nothing to change"}
    require_root(host, plan)
    res = audited(
        "serve.tune.apply", f"host:{host.hostname}", {"profile": prof.name}, principal,
        lambda: apply_plan(host, plan, st.folder, extra={"profile_path": prof.path}),
    )  # fmt: skip
    return res.to_json()


class Conflict(UsageError):
    """The write needs a person's choice the API does not ask for (409)."""
