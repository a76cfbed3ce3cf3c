"""The network isolation of a Slurm job, from its prolog and epilog (docs/net-prove.md).

On by ``[net] policy`` in dolmen.toml; without it the hooks do what they did before.

- prolog: the job's nodes (``SLURM_JOB_NODELIST``, else the job's NodeList from
  slurmctld) as addresses (their ``NodeAddr``
  from slurmctld), its tenant (``SLURM_JOB_ACCOUNT`` when the policy declares a tenant of
  that name), the jobs slurmctld still knows (``squeue``: a slot of any other ``slurm-``
  job is a leftover of one that died, emptied first), then the one set update. Anything
  that keeps the isolation from being in place is exit 3: slurmd then drains the node
  and slurmctld requeues the job elsewhere, so it never runs unisolated.
- epilog: the slot emptied; a failure is printed and audited but exits 0 (a failing
  epilog drains the node as "Epilog error", hiding dolmen's reason); the next prolog's
  collection empties the slot.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

from dolmen.config import Config
from dolmen.errors import DolmenError, ExitCode
from dolmen.host import Host


def isolation_hook(kind: str, host: Host, config: Config, env: Mapping[str, str]) -> int:
    """Put the job's isolation in place (prolog) or take it away (epilog); the exit
    code's contribution: 0, or 3 (prolog only) when the job must not start."""
    policy_path = _policy_path(config)
    if policy_path is None:
        return 0
    job_id = env.get("SLURM_JOB_ID", "")
    try:
        from dolmen.net import jobs
        from dolmen.net.model import load_policy

        if not job_id:
            raise DolmenError("SLURM_JOB_ID is not set: not run as slurmd's Prolog/Epilog")
        key = jobs.job_key("slurm", job_id)
        actor = f"dolmen-slurm-{kind}"
        if kind == "epilog":
            update = jobs.end(host, key, actor=actor)
            print(f"dolmen {kind}: job {key} isolation removed ({update.action})", file=sys.stderr)
            return 0
        policy = load_policy(policy_path)
        members, (known, _) = _members(host, env), known_jobs(host)
        account = env.get("SLURM_JOB_ACCOUNT", "")
        tenant = account if account in policy.tenants else None
        update = jobs.start(host, policy, key, members, tenant=tenant, known=known, actor=actor)
    except (DolmenError, OSError, ValueError) as e:
        message = e.message if isinstance(e, DolmenError) else str(e)
        print(f"dolmen {kind}: job isolation: {message}", file=sys.stderr)
        return int(ExitCode.ENVIRONMENT) if kind == "prolog" else 0
    print(
        f"dolmen {kind}: job {key} isolated in slot {update.slot}: {', '.join(members)}",
        file=sys.stderr,
    )
    return 0


def _policy_path(config: Config) -> str | None:
    value = config.get("net", "policy", None)
    return str(value) if value else None


def _members(host: Host, env: Mapping[str, str]) -> list[str]:
    """The job's nodes as addresses; OSError/DolmenError when any cannot be told.

    slurmd 22.05 gives a Prolog no SLURM_JOB_NODELIST (slurm.conf(5) lists it for
    PrologSlurmctld and the task prologs; seen empty on the harness's real cluster), so
    the job's NodeList comes from slurmctld when the variable is not there."""
    from dolmen.net.members import resolve
    from dolmen.slurm.client import SlurmClient
    from dolmen.slurm.parse import expand_hostlist

    client = SlurmClient(host)
    nodelist = env.get("SLURM_JOB_NODELIST", "")
    if not nodelist:
        record = client.job_record(env["SLURM_JOB_ID"])
        nodelist = (record or {}).get("NodeList", "")
        if not nodelist or nodelist == "(null)":
            raise DolmenError(f"slurmctld names no node for job {env['SLURM_JOB_ID']}")
    names = expand_hostlist(nodelist)
    if not names:
        raise DolmenError(f"the job's node list {nodelist!r} names no node")
    nodes = {n.name: n for n in client.nodes(names)}
    missing = [n for n in names if n not in nodes]
    if missing:
        raise DolmenError(f"slurmctld does not know node(s) {', '.join(missing)}")
    return resolve([nodes[n].addr or n for n in names])


def known_jobs(host: Host) -> tuple[set[str] | None, str]:
    """The keys of every job slurmctld knows (pending, running, completing), or None and
    why when it cannot say (then nothing of Slurm's is collected)."""
    from dolmen.net.jobs import job_key
    from dolmen.slurm.client import SlurmClient

    res = SlurmClient(host).run(["squeue", "-h", "-o", "%A"])
    if not res.ok:
        last = (res.stderr.strip().splitlines() or [res.reason or res.status.value])[-1]
        return None, f"squeue could not say which jobs slurmctld knows: {last[:200]}"
    keys = {job_key("slurm", line.strip()) for line in res.stdout.splitlines() if line.strip()}
    return keys, ""
