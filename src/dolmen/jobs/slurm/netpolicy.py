"""Where a Slurm job's rendezvous port comes from when the site isolates jobs
(``[net] policy`` in dolmen.toml; docs/net.md "A job's rendezvous port").

Each node's prolog grants the job's members the policy's ports between them; the batch
script derives MASTER_PORT by ``dolmen.net.rendezvous``'s rule. The two agree only when
the rule's range is one the policy grants: the policy's ``[jobs] rendezvous`` range (then
each job gets its own port in it), or, without one, 20000-39999, which the job's port
profile must then hold whole. A policy that holds neither is refused here, before
anything is submitted, rather than leaving the job to hang at its rendezvous.
"""

from __future__ import annotations

from collections.abc import Mapping

from dolmen.errors import ConfigError, UsageError
from dolmen.jobs.spec import JobSpec
from dolmen.net.model import PortRange, Ports
from dolmen.net.rendezvous import DEFAULT


def rendezvous_range(spec: JobSpec, site_env: Mapping[str, str]) -> PortRange:
    """The range ``spec``'s rendezvous port comes from: the policy's rendezvous range, else
    the rule's default (no policy, or one that grants the default whole). ConfigError for
    a policy whose ports cannot hold the job's rendezvous port; UsageError for a job that
    sets its own (``spec.env``, dolmen.toml's ``site_env``) where the policy grants one."""
    from dolmen.config import load_config

    path = load_config(None).get("net", "policy", None)
    if not path:
        return DEFAULT
    from dolmen.net.model import load_policy

    policy = load_policy(str(path))
    if policy.rendezvous is not None:
        if "DOLMEN_MASTER_PORT" in {**site_env, **spec.env}:
            raise UsageError(
                f"the job sets DOLMEN_MASTER_PORT, but network policy {policy.name} grants"
                f" each job only its own rendezvous port in {policy.rendezvous}",
                hint="remove DOLMEN_MASTER_PORT from the job's env (and [jobs] env)",
            )
        return policy.rendezvous
    tenant = spec.account if spec.account in policy.tenants else None
    if not Ports((DEFAULT,)).outside(policy.ports_for(tenant)):
        return DEFAULT
    first = 29500
    raise ConfigError(
        f"network policy {policy.name} names no [jobs] rendezvous range and does not open"
        f" tcp {DEFAULT} to a job's nodes, where its rendezvous port (MASTER_PORT) would be:"
        " the job would hang at its rendezvous",
        path=str(path),
        hint=f'add rendezvous = "{first}-{first + policy.max_jobs - 1}" under [jobs] in {path}'
        " (each job then gets its own port there; at least max_jobs ports)",
    )
