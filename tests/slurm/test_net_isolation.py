"""The prolog's success path against the real slurmctld (issue 13): with ``[net] policy``
set, a 2-node job starts, the prolog of each node puts the job's members into that node's
own nftables sets (every node is its own network namespace, so its own ruleset), the
job's ranks reach each other on the policy's ports while a non-member node and an
outsider do not, and the epilog frees the slot when the job ends; the audit log says so.

The probes run as job steps of the job itself on its nodes (``srun --jobid --overlap``:
the job's ranks), and through ``ip netns exec`` in the non-member node and in an outsider
namespace this test attaches to the cluster's bridge. The cluster is shared with the
other Slurm tests: the policy, the tables and the outsider are removed in ``finally``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from ipaddress import ip_address

import pytest

from dolmen.audit.reader import read_entries
from dolmen.host.live import LiveHost
from dolmen.host.netns import NetnsHost
from dolmen.net import nft
from dolmen.net.expect import expectation, policy_ports
from dolmen.net.jobs import job_key
from dolmen.net.model import JobAccess, Policy, load_policy, parse_address
from dolmen.net.probe_run import Proof, RunOptions, prove_matrix
from dolmen.net.prove import Endpoint, counts
from tests.slurm.cluster import SUBNET, SlurmCluster, node_addr
from tests.slurm.config import SRUN_PORTS
from tests.slurm.helpers import wait_for

pytestmark = [pytest.mark.slurm, pytest.mark.netns]

POLICY = f"""\
[policy]
name = "slurm-isolation"
max_jobs = 4

[management]                 # slurmctld and the clients on the hub; srun on the nodes
from = ["{SUBNET}.1", "{node_addr(1)}", "{node_addr(2)}", "{node_addr(3)}"]

[management.services]
ssh = 22
slurm = "6817-6819"
srun = "{SRUN_PORTS}"         # SrunPortRange: steps reach the srun of a batch script

[jobs]
tcp = [29500, "40000-40004"]
udp = "40000-40004"
"""
OUTSIDER = f"{SUBNET}.99"
TABLE = {"family": nft.FAMILY, "name": nft.TABLE}
TIMEOUT = 0.5  # one probe; the bridge answers in microseconds


def _ns(c: SlurmCluster, node: str) -> str:
    return f"{c.tag}-{node}"


@pytest.fixture
def isolated(idle_cluster: SlurmCluster) -> Iterator[tuple[SlurmCluster, Policy, list[str]]]:
    """The cluster with the policy named in the hooks' dolmen.toml and its table on every
    node and on an outsider; all of it undone afterwards."""
    c = idle_cluster
    etc = c.lab / "dolmen-etc"
    etc.mkdir(exist_ok=True)
    (c.lab / "net-policy.toml").write_text(POLICY)
    policy = load_policy(c.lab / "net-policy.toml")
    out = c.attach("out", OUTSIDER)  # neither a node nor the hub
    tables = [*(_ns(c, n) for n in c.node_names), out]
    try:
        for ns, addr in zip(tables, [*map(node_addr, range(1, c.nodes + 1)), OUTSIDER]):
            role = nft.Role((parse_address(addr),))
            nft.run_batch(NetnsHost(ns), nft.replace_batch(nft.compile_table(policy, role)))
        (etc / "dolmen.toml").write_text(f'[net]\npolicy = "{c.lab / "net-policy.toml"}"\n')
        yield c, policy, tables
    finally:
        (etc / "dolmen.toml").unlink(missing_ok=True)
        c.sl("scancel", "--full", "--user=root", check=False)
        for ns in tables:
            if nft.list_table(NetnsHost(ns)) is not None:
                nft.run_batch(NetnsHost(ns), {"nftables": [{"delete": {"table": TABLE}}]})
        subprocess.run(["ip", "netns", "del", out], capture_output=True, check=False)
        c.namespaces.remove(out)


def _endpoints(c: SlurmCluster, job_id: str, out: str) -> list[Endpoint]:
    """n1 and n2 through the job itself (a step of the job on that node: one of its
    ranks); n3 and the outsider through their namespaces."""

    def rank(node: str) -> tuple[str, ...]:
        step = ("srun", f"--jobid={job_id}", "--overlap", "-w", node, "-N1", "-n1")
        return (str(c.client), *step, "--unbuffered", "--quiet")

    return [
        Endpoint("n1", ip_address(node_addr(1)), rank("n1")),
        Endpoint("n2", ip_address(node_addr(2)), rank("n2")),
        Endpoint("n3", ip_address(node_addr(3)), ("ip", "netns", "exec", _ns(c, "n3"))),
        Endpoint("out", ip_address(OUTSIDER), ("ip", "netns", "exec", out)),
    ]


def _prove(policy: Policy, endpoints: list[Endpoint], jobs: list[JobAccess]) -> Proof:
    addrs = {e.name: e.address for e in endpoints}
    return prove_matrix(
        endpoints,
        expectation(policy, jobs, addrs),
        policy_ports(policy, jobs),
        LiveHost(),
        sample=2,
        seed=13,
        opts=RunOptions(timeout=TIMEOUT, ready_within=60.0),
    )


def _clean(proof: Proof) -> dict[str, int]:
    """The counts, asserting every probe is as the policy says. One exception is judged
    here: a denied probe to a port the listener could not bind because a daemon of the
    node holds it (slurmd's 6818, a port of srun's range) that heard nothing back. The
    daemon would have answered, so the silence is the drop (prove.py cannot tell that
    without a listener of its own, and says unknown)."""
    tally = counts(proof.observations)
    held = [
        o
        for o in proof.observations
        if o.verdict == "unknown"
        and not o.probe.allowed
        and o.detail.startswith("silent, but the listener did not hold it: could not bind")
    ]
    bad = [
        f"{o.probe.source}->{o.probe.target} {o.probe.proto}/{o.probe.port}: {o.verdict}"
        f" {o.outcome} ({o.detail}; {o.probe.why})"
        for o in proof.observations
        if o.verdict != "ok" and o not in held
    ]
    assert not bad, "\n".join(bad[:20])
    return {**tally, "held_by_daemons": len(held)}


def _reached(proof: Proof, source: str, target: str, proto: str, port: int) -> bool:
    (o,) = [
        o
        for o in proof.observations
        if (o.probe.source, o.probe.target, o.probe.proto, o.probe.port)
        == (source, target, proto, port)
    ]
    return o.outcome in ("open", "no-echo", "one-way")


def _events(c: SlurmCluster, key: str) -> list[tuple[str, str]]:
    log = c.lab / "dolmen-state" / "audit" / "audit.log"
    if not log.exists():
        return []
    return [
        (e.event.action, e.event.outcome)
        for e in read_entries(log)
        if e.event is not None and e.event.target == f"job:{key}"
    ]


def test_a_two_node_job_is_isolated_by_its_prologs_and_released_by_its_epilogs(
    isolated: tuple[SlurmCluster, Policy, list[str]],
) -> None:
    c, policy, tables = isolated
    flag = c.lab / "out" / "net-isolation.done"
    flag.unlink(missing_ok=True)
    # Without PrologFlags=Alloc, a node's prolog runs when the job's first step lands
    # there: the batch script on n1, the srun step on both.
    wait = f"while [ ! -e {flag} ]; do sleep 0.2; done"
    sub = c.sl(
        "sbatch", "--parsable", "-N2", "-w", "n1,n2", "-o", str(c.lab / "out" / "net-%j.out"),
        "--wrap", f"srun -N2 -n2 sh -c '{wait}'",
    )  # fmt: skip
    job_id = sub.stdout.strip().split(";")[0]
    key = job_key("slurm", job_id)
    hosts = {n: NetnsHost(_ns(c, n)) for n in c.node_names}
    try:
        wait_for(
            lambda: all(key in nft.active_jobs(hosts[n]) for n in ("n1", "n2")),
            90,
            f"job {key} in the slots of n1 and n2 (hooks log: {c.lab}/logs/hooks-n*.log)",
        )
        assert nft.active_jobs(hosts["n3"]) == {}  # not a node of the job
        members = [node_addr(1), node_addr(2)]
        job = policy.access(key, members)
        eps = _endpoints(c, job_id, tables[-1])

        running = _prove(policy, eps, [job])
        tally = _clean(running)
        assert tally["leak"] == 0 and tally["block"] == 0 and tally["probes"] > 200, tally
        assert tally["unknown"] == tally["held_by_daemons"], tally
        # The policy's ports between the ranks, both ways; nobody else gets in.
        for port in (29500, 40000, 40004):
            assert _reached(running, "n2", "n1", "tcp", port)
            assert _reached(running, "n1", "n2", "tcp", port)
        assert _reached(running, "n1", "n2", "udp", 40004)
        for src in ("n3", "out"):
            assert not _reached(running, src, "n1", "tcp", 29500)
            assert not _reached(running, src, "n2", "udp", 40000)
        assert not _reached(running, "n2", "n1", "tcp", 40005)  # just past the range
    finally:
        flag.touch()
    # The job ends by itself: each node's epilog empties and frees its slot.
    wait_for(
        lambda: not any(nft.active_jobs(hosts[n]) for n in ("n1", "n2")),
        90,
        f"the epilogs of job {key} to free its slots",
    )
    shown = c.sl("scontrol", "show", "job", job_id, check=False).stdout
    assert "JobState=COMPLETED" in shown and "Restarts=0" in shown, shown  # never requeued

    ended = _prove(policy, [*eps[2:], *_netns_endpoints(c)], [])
    _clean(ended)
    assert not _reached(ended, "n2ns", "n1ns", "tcp", 29500)  # the grant is gone

    wait_for(  # the epilog's outcome event follows its nft batch
        lambda: _events(c, key).count(("net.job_release", "success")) >= 2,
        30,
        f"both epilogs' net.job_release success of {key} in {c.lab}/dolmen-state/audit",
    )
    events = _events(c, key)
    assert events.count(("net.job_isolate", "unknown")) == 2, events  # intent, per node
    assert events.count(("net.job_isolate", "success")) == 2, events
    assert events.count(("net.job_release", "unknown")) == 2, events
    assert not any(outcome == "failure" for _, outcome in events), events


def _netns_endpoints(c: SlurmCluster) -> list[Endpoint]:
    """n1 and n2 through their namespaces (the job is gone, its steps with it)."""
    return [
        Endpoint(f"n{i}ns", ip_address(node_addr(i)), ("ip", "netns", "exec", _ns(c, f"n{i}")))
        for i in (1, 2)
    ]
