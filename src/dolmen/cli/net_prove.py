"""``dolmen net prove``: probe every pair of endpoints and compare with the policy.

    dolmen net prove --policy FILE --endpoints FILE [--job ID=MEMBER,MEMBER[@TENANT]]...
        [--sample N] [--seed N] [--timeout SECONDS] [--python PATH] [--json]

A probe agent runs in every endpoint (``ip netns exec``, ssh: the endpoints file says
how, docs/net-prove.md); every ordered pair is probed with TCP and UDP on the policy's
ports, their edges and a sample of others. The running jobs come from ``--job``
(members are endpoint names or addresses) and the policy's static ``[job.<id>]``.

Exit codes: 0 every probe as the policy says; 1 a leak (connected, the policy denies
it) or a block (did not connect, the policy allows it); 2 bad input, or a probe that
could not be told (a listener that could not hold its port: never read as a pass);
3 the machine refused (not root for ``ip netns exec``, no agent could start).
"""

from __future__ import annotations

import json

import click

from dolmen.cli.main import exit_with
from dolmen.errors import EnvironmentProblem, UsageError


@click.command()
@click.option("--policy", "policy", required=True, metavar="FILE", help="The policy (TOML).")
@click.option(
    "--endpoints", "endpoints_path", required=True, metavar="FILE", help="The nodes to probe."
)
@click.option(
    "--job",
    "jobs",
    multiple=True,
    metavar="ID=MEMBER,...[@TENANT]",
    help="A running job and its members (endpoint names or addresses); repeat.",
)
@click.option("--sample", default=8, show_default=True, help="Random other ports to probe.")
@click.option("--seed", default=0, show_default=True, help="Seed of the sample (repeatable).")
@click.option(
    "--timeout",
    default=1.0,
    show_default=True,
    type=click.FloatRange(0.05, 30.0),
    metavar="SECONDS",
    help="Seconds one probe may take (0.05 to 30; sub-second on a fast fabric).",
)
@click.option("--python", default=None, metavar="PATH", help="The agents' Python (with dolmen).")
@click.option("--json", "as_json", is_flag=True, help="Print the whole matrix as JSON.")
def prove(
    policy: str,
    endpoints_path: str,
    jobs: tuple[str, ...],
    sample: int,
    seed: int,
    timeout: float,
    python: str | None,
    as_json: bool,
) -> None:
    """Prove the policy by probes between every pair of endpoints (exit 1: leak or block)."""
    from dolmen.host.live import LiveHost
    from dolmen.net.endpoints import load_endpoints
    from dolmen.net.expect import expectation, policy_ports
    from dolmen.net.model import load_policy
    from dolmen.net.probe_run import RunOptions, prove_matrix
    from dolmen.net.prove_report import exit_code, render_text, to_json

    if not 0 <= sample <= 1000:
        raise UsageError(f"--sample {sample}: 0..1000 other ports")
    seconds = timeout
    pol = load_policy(policy)
    endpoints = load_endpoints(endpoints_path)
    addresses = {e.name: e.address for e in endpoints}
    running = list(pol.static_jobs)
    for spec in jobs:
        job_id, members, tenant = parse_job(spec)
        resolved = [str(addresses[m]) if m in addresses else m for m in members]
        try:
            running.append(pol.access(job_id, resolved, tenant=tenant))
        except ValueError as e:
            raise UsageError(f"--job {spec}: {e}") from None
    opts = RunOptions(timeout=seconds, python=python or RunOptions.python)
    proof = prove_matrix(
        endpoints,
        expectation(pol, running, addresses),
        policy_ports(pol, running),
        LiveHost(),
        sample=sample,
        seed=seed,
        opts=opts,
    )
    if not any(lis.ready for lis in proof.run.listeners.values()):
        first = next(iter(proof.run.listeners.values()), None)
        raise EnvironmentProblem(
            f"no probe agent could start: {first.problem if first else 'no endpoint'}",
            hint="run as root (ip netns exec), and give --python an interpreter that has"
            " dolmen where the agents run",
        )
    if as_json:
        doc = to_json(
            proof.observations,
            endpoints,
            proof.run.listeners,
            policy=policy,
            ports=proof.ports,
            sample=proof.sample,
            seed=seed,
            timeout_s=seconds,
            seconds=proof.run.seconds,
        )
        click.echo(json.dumps(doc, indent=2))
    else:
        for source, why in sorted(proof.run.missing.items()):
            click.echo(f"{source}: {why}", err=True)
        click.echo(render_text(proof.observations, proof.run.seconds), nl=False)
    exit_with(int(exit_code(proof.observations)))


def parse_job(spec: str) -> tuple[str, list[str], str | None]:
    """``ID=MEMBER,MEMBER[@TENANT]`` -> (id, members, tenant); UsageError otherwise."""
    job_id, eq, rest = spec.partition("=")
    rest, at, tenant = rest.rpartition("@") if "@" in rest else (rest, "", "")
    members = [m.strip() for m in rest.split(",") if m.strip()]
    if not eq or not job_id.strip() or not members or (at and not tenant.strip()):
        raise UsageError(
            f"--job {spec!r}: write ID=MEMBER,MEMBER or ID=MEMBER,MEMBER@TENANT",
            hint="members are endpoint names or addresses: --job 7=node1,node2@teamA",
        )
    return job_id.strip(), members, tenant.strip() or None
