"""Issue 13, proved: a policy applied to a cluster of namespaces, the full probe matrix,
jobs started and ended, a job that died collected, and at every point nothing leaks.

The cluster (tests/net/prove/cluster.py): two jobs of two members each, a management host,
an outsider, on a bridge inside a namespace of their own. Each step proves the whole
matrix (every ordered pair, TCP and UDP, the policy's ports and their edges, the
well-known ones, two random ones) against what the policy says for the jobs running then.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dolmen.audit.event import AuditEvent
from dolmen.audit.reader import read_entries
from dolmen.net import jobs, nft
from dolmen.net.prove import counts
from tests.net.prove.lab import Lab, clean

pytestmark = pytest.mark.netns


def read_events() -> list[AuditEvent]:
    log = Path(os.environ["DOLMEN_STATE_DIR"]) / "audit" / "audit.log"
    return [e.event for e in read_entries(log) if e.event is not None] if log.exists() else []


def test_the_applied_policy_is_exactly_what_the_probes_see(lab: Lab) -> None:
    lab.reset()
    proof = lab.prove()
    tally = clean(proof)
    opened = [o for o in proof.observations if o.reached]
    # only the management host reaches anyone, only on management ports
    assert opened and {o.probe.source for o in opened} == {"mgmt"}
    assert {o.probe.port for o in opened} == {22, 6817, 6818, 6819, 9100}
    assert all(o.witnessed for o in opened)  # the listener saw every one that reached
    print(f"probe matrix, policy applied: {tally}")


def test_jobs_start_and_end_and_a_dead_one_is_collected(lab: Lab) -> None:
    lab.reset()
    j1 = ["j1a", "j1b"]
    j2 = ["j2a", "j2b"]
    k1, k2 = jobs.job_key("slurm", 1), jobs.job_key("slurm", 2)
    for name in j1:  # the prolog on each node of job 1
        jobs.start(lab.host(name), lab.policy, k1, lab.addresses(*j1), known={k1})
    for name in j2:
        jobs.start(
            lab.host(name), lab.policy, k2, lab.addresses(*j2), tenant="teamb", known={k1, k2}
        )
    running = [lab.access(k1, *j1), lab.access(k2, *j2, tenant="teamb")]
    proof = lab.prove(running)
    both = clean(proof)
    reached = {
        (o.probe.source, o.probe.target, o.probe.port)
        for o in proof.observations
        if o.reached and o.probe.source != "mgmt"
    }
    assert ("j1a", "j1b", 29500) in reached and ("j2b", "j2a", 41000) in reached
    assert not any(p == 29500 for s, _, p in reached if s.startswith("j2"))  # teamb's ports

    for name in j1:  # job 1 ends: its members no longer reach each other
        assert jobs.end(lab.host(name), k1).action == "ended"
    clean(lab.prove(running[1:]))

    # job 2's epilog never ran (the nodes rebooted); the next prolog collects its slot, so
    # teamb's ports close and job 3's (the default ones) open
    k3 = jobs.job_key("slurm", 3)
    for name in j2:
        jobs.start(lab.host(name), lab.policy, k3, lab.addresses(*j2), known={k3})
        assert set(nft.active_jobs(lab.host(name))) == {k3}
    after = clean(lab.prove([lab.access(k3, *j2)]))
    for name in j2:
        jobs.end(lab.host(name), k3)
    events = [e for e in read_events() if e.action.startswith("net.job_")]
    gc = [e for e in events if e.action == "net.job_gc" and e.target == f"job:{k2}"]
    assert len(gc) == 4  # intent and outcome, on both nodes
    assert all(e.outcome in ("unknown", "success") for e in gc)
    print(f"probe matrix, two jobs: {both}; after the collection: {after}")


def test_an_isolation_that_cannot_be_put_in_place_refuses_the_job(lab: Lab) -> None:
    lab.reset()
    host = lab.host("j1a")
    nft.run_batch(host, {"nftables": [{"delete": {"table": {"family": "inet", "name": "dolmen"}}}]})
    try:
        with pytest.raises(jobs.IsolationFailed, match="does not start") as e:
            jobs.start(host, lab.policy, "slurm-9", lab.addresses("j1a", "j1b"), known=set())
        assert int(e.value.exit_code) == 3
        last = [ev for ev in read_events() if ev.target == "job:slurm-9"]
        assert [ev.outcome for ev in last] == ["unknown", "failure"]
        assert json.dumps(last[-1].details).count("reason") == 1
    finally:
        lab.apply(names=["j1a"])


def test_an_apply_crashed_half_way_never_opens_anything(lab: Lab, tmp_path: Path) -> None:
    """A job runs; an apply of a wider policy on j1b is SIGKILLed after the journal
    (point 1) and after the batch (point 2). At each point the node enforces one whole
    table, the old or the new (nft is atomic), the job keeps its access, nothing beyond
    the two policies connects; the rollback brings the old one back exactly."""
    from dolmen.net.nft_change import rollback_policy

    lab.reset()
    lab.apply_journaled()
    wider = lab.wider(tmp_path)
    key = jobs.job_key("slurm", 21)
    for name in ("j1a", "j1b"):
        jobs.start(lab.host(name), lab.policy, key, lab.addresses("j1a", "j1b"), known={key})
    job = [lab.access(key, "j1a", "j1b")]
    seen = {}
    try:
        for point, expected in (("1", "old"), ("2", "new")):
            died = lab.crash_apply("j1b", wider, point)
            assert died.returncode == -9, died.stderr
            table, matrix = lab.which_table(job, wider, crashed="j1b", sample=0)
            seen[point] = table
            assert table == expected
            assert counts(matrix)["ok"] == counts(matrix)["probes"]
            back = rollback_policy(lab.host("j1b"))  # the interrupted apply, undone
            assert back is not None and back.complete
        clean(lab.prove(job, sample=0))  # rolled back: the old policy, the job's access kept
    finally:
        lab.roll_back_all()
    print(f"crash points: {seen}")
