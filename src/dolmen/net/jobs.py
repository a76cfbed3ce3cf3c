"""A job's isolation as it starts and ends: what the Slurm prolog/epilog and the local
supervisor call (docs/net-prove.md "Wired to jobs").

- ``start``: first collect the leftovers of jobs that died (``collect_garbage``), then
  put the job's members in its slot (``nft.job_started``: one atomic set update). It
  fails closed: when the slot cannot be filled, ``IsolationFailed`` (exit 3) and the
  caller does not start the job.
- ``end``: empty and free the job's slot (``nft.job_ended``).
- ``collect_garbage``: a slot whose job the scheduler no longer knows belonged to a job
  whose epilog never ran (a node that rebooted, a supervisor killed with -9); all such
  slots are emptied in one atomic batch (``dolmen net gc`` runs it on demand). Only
  the scheduler's own jobs (by the id prefix, ``slurm-`` or ``local-``) are touched,
  never the policy's static jobs, and nothing at all when the scheduler could not say
  which jobs it knows (``known`` is None: an unreachable slurmctld is not evidence that
  no job runs).

Every change is two audit events, the intent then the outcome (``net.job_isolate``,
``net.job_release``, ``net.job_gc``); an audit log that cannot be written refuses the
start (AuditUnavailable, exit 4) as everywhere in dolmen.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from dolmen.errors import AuditUnavailable, DolmenError, EnvironmentProblem
from dolmen.host import Host
from dolmen.net import nft
from dolmen.net.model import Policy, Ports

ACTIONS = ("net.job_isolate", "net.job_release", "net.job_gc")
SCHEDULERS = ("slurm", "local")


class IsolationFailed(EnvironmentProblem):
    """The job's isolation could not be put in place (or taken away); exit 3."""


def job_key(scheduler: str, job_id: str | int) -> str:
    """The job's name in the nftables slots: ``slurm-1234``, ``local-17``."""
    assert scheduler in SCHEDULERS, scheduler
    return f"{scheduler}-{job_id}"


def start(
    host: Host,
    policy: Policy,
    key: str,
    members: Iterable[str],
    *,
    tenant: str | None = None,
    known: Collection[str] | None = None,
    actor: str | None = None,
    ports: Ports | None = None,
) -> nft.JobUpdate:
    """Isolate job ``key`` (module docstring); ``known``: the keys of every job the
    scheduler knows now (None: it could not say); ``ports``: the job's own, when the
    scheduler gives it some. IsolationFailed when not in place."""
    members = list(members)
    collect_garbage(host, policy, {key.split("-", 1)[0]: known}, keep=(key,), actor=actor)
    details: dict[str, Any] = {"members": members, "tenant": tenant or "", "policy": policy.name}
    if ports is not None:
        details["ports"] = {"tcp": [str(r) for r in ports.tcp], "udp": [str(r) for r in ports.udp]}
    _audit("net.job_isolate", key, "unknown", {"phase": "intent", **details}, actor)
    try:
        update = nft.job_started(host, key, members, policy=policy, tenant=tenant, ports=ports)
    except (DolmenError, ValueError, OSError) as e:
        why = _why(e)
        _outcome("net.job_isolate", key, why, details, actor)
        raise IsolationFailed(
            f"job {key}: its network isolation is not in place, so it does not start: {why}",
            hint="dolmen net verify shows the table; a free job slot needs the policy's "
            "max_jobs above the jobs running on this node",
        ) from e
    _outcome("net.job_isolate", key, "", {**details, "slot": update.slot}, actor)
    return update


def end(host: Host, key: str, *, actor: str | None = None) -> nft.JobUpdate:
    """Take job ``key``'s members out of its slot; IsolationFailed when nft refused."""
    action = "net.job_release"
    _audit(action, key, "unknown", {"phase": "intent"}, actor)
    try:
        update = nft.job_ended(host, key)
    except (DolmenError, OSError) as e:
        why = _why(e)
        _outcome(action, key, why, {}, actor)
        raise IsolationFailed(f"job {key}: its slot could not be emptied: {why}") from e
    _outcome(action, key, "", {"result_action": update.action, "slot": update.slot}, actor)
    return update


def stale_jobs(
    slots: Mapping[int, str],
    policy: Policy,
    scheduler: str,
    known: Collection[str] | None,
    keep: Sequence[str] = (),
) -> dict[int, str]:
    """The slots (slot -> job key) of ``scheduler``'s jobs that are not in ``known``
    (pure): what a collection empties. Nothing when ``known`` is None, nor a static job."""
    if known is None:
        return {}
    static = {j.job_id for j in policy.static_jobs}
    prefix = f"{scheduler}-"
    return {
        k: job
        for k, job in slots.items()
        if job.startswith(prefix) and job not in known and job not in keep and job not in static
    }


def collect_garbage(
    host: Host,
    policy: Policy,
    known: Mapping[str, Collection[str] | None],
    *,
    keep: Sequence[str] = (),
    actor: str | None = None,
    strict: bool = False,
) -> list[str]:
    """Empty the slots of each scheduler's jobs that it no longer knows (``known``:
    scheduler -> the keys of its jobs, None when it could not say: its slots are kept),
    all in ONE atomic batch; the keys emptied. A batch nft refuses is audited and, unless
    ``strict``, does not stop the caller (its jobs are gone already; the next run tries
    again); ``strict``: IsolationFailed."""
    from dolmen.net.nft_jobs import release_many, slots_in_use

    def stale(slots: Mapping[int, str]) -> dict[int, str]:
        out: dict[int, str] = {}
        for scheduler, keys in known.items():
            out |= stale_jobs(slots, policy, scheduler, keys, keep)
        return out

    try:
        planned = stale(slots_in_use(host))
    except (DolmenError, OSError) as e:
        if strict:
            raise IsolationFailed(f"the job slots could not be read: {_why(e)}") from e
        return []
    if not planned:
        return []
    for k, key in sorted(planned.items()):
        _audit("net.job_gc", key, "unknown", {"phase": "intent", "slot": k}, actor)
    try:
        freed = release_many(host, stale)
    except (DolmenError, OSError) as e:
        for k, key in sorted(planned.items()):
            _outcome("net.job_gc", key, _why(e), {"slot": k}, actor)
        if strict:
            raise IsolationFailed(f"the stale job slots could not be emptied: {_why(e)}") from e
        return []
    for k, key in sorted(planned.items()):
        done = "ended" if freed.get(k) == key else "absent"  # gone meanwhile: nothing to do
        _outcome("net.job_gc", key, "", {"slot": k, "result_action": done}, actor)
    return sorted(freed.values())


def _why(e: BaseException) -> str:
    return e.message if isinstance(e, DolmenError) else str(e)


def _audit(action: str, key: str, outcome: str, details: dict[str, Any], actor: str | None) -> None:
    from dolmen.audit import record_event

    record_event(action, f"job:{key}", outcome=outcome, details=details, actor=actor)


def _outcome(action: str, key: str, why: str, details: dict[str, Any], actor: str | None) -> None:
    """The outcome event. The change has happened (or failed) by now: a log that cannot
    be written no longer refuses anything, and the intent event already names it."""
    result = {"phase": "outcome", "result": "failed" if why else "success", **details}
    if why:
        result["reason"] = why
    with contextlib.suppress(AuditUnavailable):
        _audit(action, key, "failure" if why else "success", result, actor)
