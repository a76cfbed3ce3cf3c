"""The network isolation of a local job, put in place before its first rank starts.

On by ``[net] policy`` in dolmen.toml (nothing happens without it). The job's members
are this host's global addresses (every rank of a local job runs here), its tenant
the job's account when the policy declares a tenant of that name, and the jobs the
store still counts as active are the ones whose slots are kept: any other ``local-``
slot is a leftover of a supervisor that died, emptied first (``dolmen.net.jobs``).
Failing to isolate fails the job before any rank runs (the supervisor exits 3).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dolmen.host import Host
from dolmen.host.process import pid_alive
from dolmen.jobs.audit import SUPERVISOR
from dolmen.jobs.local.store import ACTIVE, JobRow, JobStore


@dataclass(frozen=True)
class Isolation:
    """A job whose slot is filled, to be emptied when it ends."""

    host: Host
    key: str


def begin(store: JobStore, job_id: int, note: Callable[[str, str], None]) -> Isolation | None:
    """Isolate the job; None when no policy is configured. IsolationFailed (exit 3),
    AuditUnavailable (exit 4) or a ConfigError when it is not in place."""
    from dolmen.config import load_config

    path = load_config(None).get("net", "policy", None)
    if not path:
        return None
    from dolmen.host.live import LiveHost
    from dolmen.net import jobs
    from dolmen.net.model import load_policy
    from dolmen.net.role import host_role

    host = LiveHost()
    policy = load_policy(str(path))
    spec = store.get(job_id).spec
    key = jobs.job_key("local", job_id)
    members = [str(a.network_address) for a in host_role(host).addresses]
    if not members:  # `ip` absent or failing reads as none: never a job without its entry
        raise jobs.IsolationFailed(
            f"job {key}: this host's addresses could not be read (ip -j addr show), so its"
            " network isolation is not in place and it does not start"
        )
    known = known_jobs(store)
    tenant = spec.account if spec.account in policy.tenants else None
    update = jobs.start(
        host, policy, key, members, tenant=tenant, known=known | {key}, actor=SUPERVISOR
    )
    note("isolation", f"job {key} isolated in slot {update.slot}: {', '.join(members)}")
    return Isolation(host, key)


def known_jobs(store: JobStore) -> set[str]:
    """The keys of the store's jobs that still run (``local-<id>``): the slots to keep."""
    from dolmen.net.jobs import job_key

    return {job_key("local", j.id) for j in store.jobs() if _alive(j)}


def _alive(job: JobRow) -> bool:
    """Active in the store and watched by a live supervisor (or one not started yet): a
    job whose supervisor was killed with -9 still reads RUNNING until someone looks."""
    if job.state not in ACTIVE:
        return False
    return job.supervisor_pid is None or pid_alive(job.supervisor_pid)


def end(iso: Isolation | None, note: Callable[[str, str], None]) -> None:
    """Empty the job's slot; a failure is noted (the next start collects it)."""
    if iso is None:
        return
    from dolmen.net import jobs

    try:
        jobs.end(iso.host, iso.key, actor=SUPERVISOR)
    except jobs.IsolationFailed as e:
        note("isolation", f"{e.message}; the next job's start collects it")
        return
    note("isolation", f"job {iso.key} isolation removed")
