"""The prolog's success path against the real slurmctld (issue 13): with ``[net] policy``
set, a 2-node job starts, the prolog of each node puts the job's members into that node's
own nftables sets (every node is its own network namespace, so its own ruleset), the
job's ranks reach each other on the policy's ports while a non-member node and an
outsider do not, and the epilog frees the slot when the job ends; the audit log says so.

The probes run as job steps of the job itself on its nodes (``srun --jobid --overlap``:
the job's ranks), and through ``ip netns exec`` in the non-member node and in an outsider
namespace this test attaches to the cluster's bridge. The cluster is shared with the
other Slurm tests: the policy, the tables and the outsider are removed in ``finally``.

The policy has a ``[jobs] rendezvous`` range (docs/net.md "A job's rendezvous port"): each
job gets its own port there, the one its ranks derive. A dolmen training job (8 ranks on
two nodes, a TCP all-reduce through MASTER_ADDR:MASTER_PORT) rendezvouses across the
isolation, and a second job sharing its master node does not reach its port there.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from ipaddress import ip_address
from pathlib import Path

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
from tests.slurm.helpers import backend, output, train_spec, wait_for

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
rendezvous = "29500-29503"   # each job's own port (max_jobs of them)
tcp = "40000-40004"
udp = "40000-40004"
"""
SHARED = ["tcp 40000-40004", "udp 40000-40004"]  # every job's, beside its own rendezvous port
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


def _prove(
    policy: Policy, endpoints: list[Endpoint], jobs: list[JobAccess], also: tuple[int, ...] = ()
) -> Proof:
    """The matrix between ``endpoints`` with ``jobs`` running, on the policy's and the
    jobs' ports and ``also``."""
    addrs = {e.name: e.address for e in endpoints}
    return prove_matrix(
        endpoints,
        expectation(policy, jobs, addrs),
        tuple(sorted({*policy_ports(policy, jobs), *also})),
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


def _submit_waiting(c: SlurmCluster, nodes: str, flag: Path) -> str:
    """Submit a job whose step runs on the two ``nodes`` until ``flag`` exists; its id.

    Without PrologFlags=Alloc, a node's prolog runs when the job's first step lands
    there: the batch script on the first node, the srun step on both."""
    wait = f"while [ ! -e {flag} ]; do sleep 0.2; done"
    sub = c.sl(
        "sbatch", "--parsable", "-N2", "-w", nodes, "-o", str(c.lab / "out" / "net-%j.out"),
        "--wrap", f"srun -N2 -n2 sh -c '{wait}'",
    )  # fmt: skip
    return sub.stdout.strip().split(";")[0]


def test_a_two_node_job_is_isolated_by_its_prologs_and_released_by_its_epilogs(
    isolated: tuple[SlurmCluster, Policy, list[str]],
) -> None:
    c, policy, tables = isolated
    flag = c.lab / "out" / "net-isolation.done"
    flag.unlink(missing_ok=True)
    job_id = _submit_waiting(c, "n1,n2", flag)
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
        job = _access(policy, job_id, members)
        port = job.ports.tcp[0].first  # its own rendezvous port
        assert _slot_ports(hosts["n1"], key) == [f"tcp {port}", *SHARED]
        eps = _endpoints(c, job_id, tables[-1])

        running = _prove(policy, eps, [job])
        tally = _clean(running)
        assert tally["leak"] == 0 and tally["block"] == 0 and tally["probes"] > 200, tally
        assert tally["unknown"] == tally["held_by_daemons"], tally
        # The job's ports between the ranks, both ways; nobody else gets in.
        for p in (port, 40000, 40004):
            assert _reached(running, "n2", "n1", "tcp", p)
            assert _reached(running, "n1", "n2", "tcp", p)
        assert _reached(running, "n1", "n2", "udp", 40004)
        for src in ("n3", "out"):
            assert not _reached(running, src, "n1", "tcp", port)
            assert not _reached(running, src, "n2", "udp", 40000)
        assert not _reached(running, "n2", "n1", "tcp", 40005)  # just past the range
        other = 29503 if port == 29500 else 29500  # another job's (a probed edge of the range)
        assert not _reached(running, "n2", "n1", "tcp", other)
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

    ended = _prove(policy, [*eps[2:], *_netns_endpoints(c)], [], also=(port,))
    _clean(ended)
    assert not _reached(ended, "n2ns", "n1ns", "tcp", port)  # the grant is gone

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


def _access(policy: Policy, job_id: str, members: list[str]) -> JobAccess:
    """What the prolog grants a job of its first run (slurmctld's Restarts=0): its own
    rendezvous port and the shared ports."""
    return policy.access(job_key("slurm", job_id), members, ports=policy.own_ports(job_id, 0))


def _slot_ports(host: NetnsHost, key: str) -> list[str]:
    """The ports of job ``key``'s IPv4 keys in ``host``'s table as nft lists them back
    (``["tcp 29501", "tcp 40000-40004", ...]``), sorted."""
    slot = nft.active_jobs(host)[key]
    objects = nft.list_table(host) or []
    (elems,) = [
        o["set"].get("elem", []) for o in objects if o.get("set", {}).get("name") == f"j{slot}_v4"
    ]
    found = set()
    for e in elems:
        _, proto, port = (e["elem"]["val"] if "elem" in e else e)["concat"]
        found.add(
            f"{proto} {'-'.join(map(str, port['range'])) if isinstance(port, dict) else port}"
        )
    return sorted(found)


def test_a_dolmen_job_rendezvouses_across_the_isolation_on_a_port_a_second_job_cannot_reach(
    isolated: tuple[SlurmCluster, Policy, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dolmen job (planned under the same dolmen.toml as the hooks: its MASTER_PORT is
    in the policy's rendezvous range) on n1 and n2: its 8 ranks all-reduce over TCP
    through MASTER_ADDR:MASTER_PORT, n2's reaching n1 through the isolation. A second job
    on n1 and n3 gets its own port on n1; n3, its member, reaches that one and the
    shared ports on n1, never the first job's rendezvous port."""
    c, policy, tables = isolated
    monkeypatch.setenv("DOLMEN_CONFIG_DIR", str(c.lab / "dolmen-etc"))  # [net] policy
    b = backend(c)
    spec = train_spec(c, "rdzv", steps=10_000, step_s=0.5, allreduce="tcp", exclude_nodes=("n3",))
    assert "% 4))" in b.plan(spec).artifacts["rdzv.sbatch"]  # 29500 + (...) % 4: the range
    first = b.submit(spec).job_id
    flag = c.lab / "out" / "net-rdzv.done"
    flag.unlink(missing_ok=True)
    second = ""
    hosts = {n: NetnsHost(_ns(c, n)) for n in c.node_names}
    try:
        # Step 0's sum over 8 ranks, (rank + 1) x 1: the rendezvous crossed the isolation
        # (n2's ranks reached rank 0 on n1), and rank 0's listener is closed again.
        wait_for(
            lambda: "0: step 0 total=36\n" in output(c, "rdzv", first),
            120,
            f"job {first}'s first all-reduce over its rendezvous port ({c.lab}/out/rdzv-{first}.out)",
        )
        mine = _access(policy, first, [node_addr(1), node_addr(2)])
        port = mine.ports.tcp[0].first
        assert _slot_ports(hosts["n1"], job_key("slurm", first)) == [f"tcp {port}", *SHARED]
        second = _submit_waiting(c, "n1,n3", flag)
        theirs = _access(policy, second, [node_addr(1), node_addr(3)])
        other = theirs.ports.tcp[0].first
        assert other != port  # ids 1 to 3 apart: ports of their own
        wait_for(
            lambda: all(
                job_key("slurm", second) in nft.active_jobs(hosts[n]) for n in ("n1", "n3")
            ),
            90,
            f"job {second} in the slots of n1 and n3 (hooks log: {c.lab}/logs/hooks-n*.log)",
        )
        assert _slot_ports(hosts["n1"], job_key("slurm", second)) == [f"tcp {other}", *SHARED]
        eps = [*_netns_endpoints(c), *_endpoints(c, second, tables[-1])[2:]]
        proof = _prove(policy, eps, [mine, theirs])
        tally = _clean(proof)
        assert tally["leak"] == 0 and tally["block"] == 0, tally
        assert _reached(proof, "n2ns", "n1ns", "tcp", port)  # the first job's ranks
        assert not _reached(proof, "n3", "n1ns", "tcp", port)  # the second job's member
        assert _reached(proof, "n3", "n1ns", "tcp", other)  # ... on its own job's port
        assert _reached(proof, "n3", "n1ns", "tcp", 40000)  # ... and the shared ones
        assert not _reached(proof, "n2ns", "n1ns", "tcp", other)
        assert "all-reduce failed" not in output(c, "rdzv", first)  # every rank still in
    finally:
        flag.touch()
        c.sl("scancel", first, check=False)
    wait_for(
        lambda: not any(nft.active_jobs(hosts[n]) for n in ("n1", "n2", "n3")),
        90,
        f"the epilogs of jobs {first} and {second} to free their slots",
    )


def _netns_endpoints(c: SlurmCluster) -> list[Endpoint]:
    """n1 and n2 through their namespaces (the job is gone, its steps with it)."""
    return [
        Endpoint(f"n{i}ns", ip_address(node_addr(i)), ("ip", "netns", "exec", _ns(c, f"n{i}")))
        for i in (1, 2)
    ]
