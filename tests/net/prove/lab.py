"""The lab of the isolation tests: the namespace cluster, its policy, ``prove`` and ``clean``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dolmen.host.live import LiveHost
from dolmen.host.netns import NetnsHost
from dolmen.net import nft
from dolmen.net.expect import expectation, policy_ports
from dolmen.net.model import JobAccess, Policy, load_policy, parse_address
from dolmen.net.probe_run import Proof, RunOptions, prove_matrix, run_probes
from dolmen.net.prove import Endpoint, Observation, counts, judge, plan_probes, sample_ports
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
SRC = Path(__file__).resolve().parents[3] / "src"
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

    def apply_journaled(self) -> None:
        """The policy on every node through the journaled engine (``dolmen net apply``)."""
        from dolmen.net.nft_change import apply_policy, plan_policy
        from dolmen.net.role import host_role

        for name in self.cluster.nodes:
            host = self.host(name)
            assert apply_policy(host, plan_policy(host, self.policy, host_role(host))).ok

    def roll_back_all(self) -> None:
        """Every node's journals rolled back (none left for these namespaces)."""
        from dolmen.net.nft_change import rollback_policy

        for name in self.cluster.nodes:
            for _ in range(3):
                if rollback_policy(self.host(name)) is None:
                    break

    def wider(self, folder: Path) -> Policy:
        """Policy B: the outsider joins the management plane. Its table on one node is
        observable (out reaches that node's ssh): probes tell which table is in force."""
        path = folder / "wider.toml"
        path.write_text(
            POLICY.replace('from = ["10.77.0.2"]', 'from = ["10.77.0.2", "10.77.0.99"]')
        )
        return load_policy(path)

    def crash_apply(
        self, name: str, policy: Policy, point: str
    ) -> subprocess.CompletedProcess[str]:
        """``dolmen net apply`` of ``policy`` on ``name``, SIGKILLed at ``point``
        (tune/crash.py: 1 after the journal, 2 after the batch)."""
        env = {**os.environ, "PYTHONPATH": str(SRC), "DOLMEN_TUNE_CRASH_AT": point}
        cmd = [sys.executable, "-m", "dolmen.cli.main", "net", "apply", "--yes"]
        cmd += ["--policy", policy.origin, "--netns", self.cluster.nodes[name].netns]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)

    def which_table(
        self, jobs: Sequence[JobAccess], wider: Policy, *, crashed: str, sample: int = 2
    ) -> tuple[str, list[Observation]]:
        """Prove the matrix once, judged against both policies: which whole table the
        crashed node enforces (``old``, ``new``, or ``a mixture of both``), and the matrix
        as enforced (the crashed node's probes judged by that table, the others by the old
        one). Asserted on the way: no probe connected that neither policy allows."""
        addrs = {e.name: e.address for e in self.endpoints}
        old = expectation(self.policy, list(jobs), addrs)
        new = expectation(wider, list(jobs), addrs)

        def either(s: str, t: str, proto: str, port: int) -> tuple[bool, str]:
            a, b = old(s, t, proto, port), new(s, t, proto, port)
            return (a[0] or b[0], a[1] if a[0] else b[1])

        named = policy_ports(self.policy, list(jobs))
        ports = tuple(sorted(set(named))) + sample_ports(named, sample, 13)
        probes = {
            k: plan_probes(self.endpoints, ports, fn)
            for k, fn in (("old", old), ("new", new), ("either", either))
        }
        run = run_probes(probes["old"], self.endpoints, LiveHost(), RunOptions(timeout=TIMEOUT))
        judged = {k: judge(p, run.results, run.listeners, run.missing) for k, p in probes.items()}
        assert counts(judged["either"])["leak"] == 0, "a probe connected that no policy allows"
        table = "a mixture of both"
        for name in ("old", "new"):
            if all(o.verdict == "ok" for o in judged[name] if o.probe.target == crashed):
                table = name
                break
        chosen = judged[table] if table != "a mixture of both" else judged["old"]
        matrix = [
            mine if o.probe.target == crashed else o
            for o, mine in zip(judged["old"], chosen, strict=True)
        ]
        return table, matrix

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
