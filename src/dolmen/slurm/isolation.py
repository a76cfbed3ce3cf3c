"""The network isolation of a Slurm job, from its prolog and epilog (docs/net-prove.md).

On by ``[net] policy`` in dolmen.toml; without it the hooks do what they did before.

- prolog: the job's nodes (``SLURM_JOB_NODELIST``, else the job's NodeList from
  slurmctld) as addresses (their ``NodeAddr``
  from slurmctld), its tenant (``SLURM_JOB_ACCOUNT`` when the policy declares a tenant of
  that name), its ports (with a ``[jobs] rendezvous`` range: its own rendezvous port, by
  the rule its ranks use, from its id and slurmctld's ``Restarts``, and the profile's
  shared ports), the jobs slurmctld still knows (``squeue``: a slot of any other
  ``slurm-`` job is a leftover of one that died, emptied first), then the one set
  update. Anything
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
        record = _job_record(host, job_id)
        members, (known, _) = _members(host, env, record), known_jobs(host)
        account = env.get("SLURM_JOB_ACCOUNT", "")
        tenant = account if account in policy.tenants else None
        ports = None
        if policy.rendezvous is not None:
            ports = policy.own_ports(job_id, _restarts(record, job_id), tenant)
        update = jobs.start(
            host, policy, key, members, tenant=tenant, known=known, actor=actor, ports=ports
        )
    except (DolmenError, OSError, ValueError) as e:
        message = e.message if isinstance(e, DolmenError) else str(e)
        print(f"dolmen {kind}: job isolation: {message}", file=sys.stderr)
        return int(ExitCode.ENVIRONMENT) if kind == "prolog" else 0
    own = f"; ports tcp {', '.join(map(str, ports.tcp))}" if ports is not None else ""
    print(
        f"dolmen {kind}: job {key} isolated in slot {update.slot}: {', '.join(members)}{own}",
        file=sys.stderr,
    )
    return 0


def _policy_path(config: Config) -> str | None:
    value = config.get("net", "policy", None)
    return str(value) if value else None


def _job_record(host: Host, job_id: str) -> Mapping[str, str]:
    """slurmctld's record of the job (``scontrol show job``); DolmenError without one."""
    from dolmen.slurm.client import SlurmClient

    record = SlurmClient(host).job_record(job_id)
    if record is None:
        raise DolmenError(f"slurmctld has no record of job {job_id}")
    return record


def _restarts(record: Mapping[str, str], job_id: str) -> int:
    """The job's restart count (``Restarts``): SLURM_RESTART_COUNT of its batch script,
    which its rendezvous port is derived from; DolmenError when the record lacks it."""
    text = record.get("Restarts", "")
    if not (text.isascii() and text.isdigit()):
        raise DolmenError(
            f"slurmctld's record of job {job_id} has no restart count (Restarts={text!r}):"
            " its rendezvous port cannot be told"
        )
    return int(text)


def _members(host: Host, env: Mapping[str, str], record: Mapping[str, str]) -> list[str]:
    """The job's nodes as addresses; OSError/DolmenError when any cannot be told.

    slurmd 22.05 gives a Prolog no SLURM_JOB_NODELIST (slurm.conf(5) lists it for
    PrologSlurmctld and the task prologs; seen empty on the harness's real cluster), so
    the job's NodeList comes from slurmctld's ``record`` when the variable is not there."""
    from dolmen.net.members import resolve
    from dolmen.slurm.client import SlurmClient
    from dolmen.slurm.parse import expand_hostlist

    client = SlurmClient(host)
    nodelist = env.get("SLURM_JOB_NODELIST", "")
    if not nodelist:
        nodelist = record.get("NodeList", "")
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
