"""The lab of the isolation tests: the namespace cluster, its policy, ``prove`` and ``clean``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dolmen.host.live import LiveHost
from dolmen.host.netns import NetnsHost
from dolmen.net import nft
from dolmen.net.expect import expectation, policy_ports
from dolmen.net.model import JobAccess, Policy, parse_address
from dolmen.net.probe_run import Proof, RunOptions, prove_matrix
from dolmen.net.prove import Endpoint, counts
from tests.net.prove.cluster import Cluster

POLICY = """\
[policy]
name = "prove-test"
max_jobs = 8

[management]
from = ["10.77.0.2"]

[management.services]
ssh = 22
slurm = "6817-6819"
monitoring = { tcp = 9100 }

[jobs]
tcp = [29500, "40000-40010"]
udp = "40000-40010"

[tenants.teamb]
description = "job 2's tenant: its own NCCL range"
tcp = "41000-41004"
"""
# A probe's time limit in the tests: the bridge answers in microseconds; a busy 2-core
# machine needs the margin for the listener to read hundreds of probes at once.
TIMEOUT = 0.5
TABLE = {"family": nft.FAMILY, "name": nft.TABLE}


@dataclass
class Lab:
    """The cluster, its policy, and the endpoints of every node."""

    cluster: Cluster
    policy: Policy
    policy_path: Path
    endpoints: list[Endpoint]

    def host(self, name: str) -> NetnsHost:
        return NetnsHost(self.cluster.nodes[name].netns)

    def addresses(self, *names: str) -> list[str]:
        return [str(self.cluster.address(n)) for n in names]

    def apply(self, policy: Policy | None = None, names: Sequence[str] | None = None) -> None:
        """The policy's table on every node (or ``names``), each with its own role."""
        pol = policy or self.policy
        for name in names or list(self.cluster.nodes):
            role = nft.Role((parse_address(str(self.cluster.address(name))),))
            live = nft.list_table(self.host(name))
            nft.run_batch(
                self.host(name), nft.replace_batch(nft.compile_table(pol, role), live=live)
            )

    def reset(self) -> None:
        """A fresh table on every node: no job slot left by an earlier test."""
        for name in self.cluster.nodes:
            if nft.list_table(self.host(name)) is not None:
                nft.run_batch(self.host(name), {"nftables": [{"delete": {"table": TABLE}}]})
        self.apply()

    def access(self, job_id: str, *names: str, tenant: str | None = None) -> JobAccess:
        return self.policy.access(job_id, self.addresses(*names), tenant=tenant)

    def prove(
        self, jobs: Sequence[JobAccess] = (), policy: Policy | None = None, sample: int = 2
    ) -> Proof:
        pol = policy or self.policy
        addrs = {e.name: e.address for e in self.endpoints}
        return prove_matrix(
            self.endpoints,
            expectation(pol, list(jobs), addrs),
            policy_ports(pol, list(jobs)),
            LiveHost(),
            sample=sample,
            seed=13,
            opts=RunOptions(timeout=TIMEOUT),
        )


def clean(proof: Proof) -> dict[str, int]:
    """The counts, asserting the matrix is exactly the policy (with the problems shown)."""
    tally = counts(proof.observations)
    bad = [
        f"{o.probe.source}->{o.probe.target} {o.probe.proto}/{o.probe.port}: {o.verdict}"
        f" {o.outcome} ({o.detail}; {o.probe.why})"
        for o in proof.observations
        if o.verdict != "ok"
    ]
    assert not bad, "\n".join(bad[:20])
    assert tally["probes"] > 0
    return tally
