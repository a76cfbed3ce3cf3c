"""Job slots on the namespace cluster: (member, port) pairs keep two jobs on one node apart,
IPv6 members, ``dolmen net gc`` (one batch, dry run first), and the owner guard that
keeps a late release from emptying a slot another job took meanwhile."""

from __future__ import annotations

import json
import subprocess
from ipaddress import IPv6Address
from pathlib import Path

import pytest
from click.testing import CliRunner

from dolmen.audit.reader import read_entries
from dolmen.cli.net import net
from dolmen.host.live import LiveHost
from dolmen.net import jobs, nft
from dolmen.net.expect import expectation, policy_ports
from dolmen.net.model import Ports, parse_ports
from dolmen.net.nft_jobs import release_batch
from dolmen.net.probe_run import RunOptions, prove_matrix
from dolmen.net.prove import Endpoint
from tests.net.prove.lab import TIMEOUT, Lab, clean
from tests.report.contract import assert_valid

pytestmark = pytest.mark.netns


def _v6(octet: int) -> str:
    return f"fd77::{octet}"


@pytest.mark.parametrize("family", ["ipv4", "ipv6"])
def test_two_jobs_on_one_node_reach_only_their_own_ports(lab: Lab, family: str) -> None:
    """Jobs X (j1a, j1b) and Y (j1a, j2a) share j1a and the [jobs] profile but hold ports
    of their own: j1b reaches j1a on X's ports only, j2a on Y's only. With member sets and
    the profile's ports (the earlier table) j2a reached X's ranks on j1a."""
    lab.reset()
    names = ("j1a", "j1b", "j2a", "out")
    if family == "ipv6":
        for name in names:  # nodad: usable at once, no duplicate detection to wait for
            node = lab.cluster.nodes[name]
            octet = int(str(node.address).rsplit(".", 1)[1])
            add = ["ip", "-n", node.netns, "addr", "replace", f"{_v6(octet)}/64", "dev", "eth0"]
            subprocess.run([*add, "nodad"], check=True, capture_output=True)
        eps = [
            Endpoint(e.name, IPv6Address(_v6(int(str(e.address).rsplit(".", 1)[1]))), e.enter)
            for e in lab.endpoints
            if e.name in names
        ]
    else:
        eps = [e for e in lab.endpoints if e.name in names]
    addr = {e.name: str(e.address) for e in eps}
    x_ports = Ports(parse_ports("40000-40004"), parse_ports("40000-40004"))
    y_ports = Ports(parse_ports([29500, "40005-40010"]), parse_ports("40005-40010"))
    x = lab.policy.access("slurm-1", [addr["j1a"], addr["j1b"]], ports=x_ports)
    y = lab.policy.access("slurm-2", [addr["j1a"], addr["j2a"]], ports=y_ports)
    for job, nodes in ((x, ("j1a", "j1b")), (y, ("j1a", "j2a"))):
        for name in nodes:
            members = [str(m.network_address) for m in job.members]
            known = {x.job_id, y.job_id}
            jobs.start(lab.host(name), lab.policy, job.job_id, members, known=known,
                       ports=job.ports)  # fmt: skip
    assert sorted(nft.active_jobs(lab.host("j1a"))) == ["slurm-1", "slurm-2"]
    proof = prove_matrix(
        eps,
        expectation(lab.policy, [x, y], {e.name: e.address for e in eps}),
        # the edges of each job's own range (the profile's ranges merge them away)
        (*policy_ports(lab.policy, [x, y]), 40004, 40005),
        LiveHost(),
        sample=2,
        seed=13,
        opts=RunOptions(timeout=TIMEOUT),
    )
    clean(proof)  # every probe exactly as the jobs' own ports say, both families
    seen = {
        (o.probe.source, o.probe.target, o.probe.proto, o.probe.port): o.outcome
        for o in proof.observations
    }
    assert seen["j1b", "j1a", "tcp", 40004] == "open"
    assert seen["j2a", "j1a", "tcp", 40005] == "open"
    assert seen["j2a", "j1a", "tcp", 40004] == "dropped"  # X's port, on the shared node
    assert seen["j1b", "j1a", "tcp", 40005] == "dropped"  # Y's port
    assert seen["j1b", "j1a", "tcp", 29500] == "dropped"  # the rendezvous port is Y's
    for name in ("j1a", "j1b", "j2a"):
        for job in (x, y):
            jobs.end(lab.host(name), job.job_id)


def test_net_gc_empties_the_forgotten_slots_in_one_batch(
    lab: Lab, dolmen_dirs: Path, tmp_path: Path
) -> None:
    """Local jobs the (empty) job store does not know are stale; a Slurm slot is kept:
    no slurmctld here to say whether its job still runs (exit 3, named)."""
    lab.reset()
    host = lab.host("j1a")
    for key, members in (("local-5", ("j1a", "out")), ("local-6", ("j1a", "j2b"))):
        jobs.start(host, lab.policy, key, lab.addresses(*members), known=None)
    jobs.start(host, lab.policy, "slurm-7", lab.addresses("j1a", "j1b"), known=None)
    slots = nft.active_jobs(host)
    runner = CliRunner()
    base = ["gc", "--policy", str(lab.policy_path), "--netns", host.netns]

    dry = runner.invoke(net, [*base, "--scheduler", "local"])
    assert dry.exit_code == 1, dry.output
    assert "slot 0: local-5" in dry.output and "slot 1: local-6" in dry.output
    assert nft.active_jobs(host) == slots  # a dry run changes nothing

    done = runner.invoke(net, [*base, "--scheduler", "local", "--yes", "--json"])
    assert done.exit_code == 0, done.output
    doc = assert_valid(json.loads(done.output))  # dolmen.net.gc/1
    assert doc["collected"] == ["local-5", "local-6"] and doc["dry_run"] is False
    assert nft.active_jobs(host) == {"slurm-7": 2}
    gc = [
        (e.event.target, e.event.outcome)
        for e in read_entries(dolmen_dirs / "audit" / "audit.log")
        if e.event is not None and e.event.action == "net.job_gc"
    ]
    assert gc == [("job:local-5", "unknown"), ("job:local-6", "unknown"),
                  ("job:local-5", "success"), ("job:local-6", "success")]  # fmt: skip
    # The outsider's grant went with local-5: the slurm job's members still get in.
    slurm = lab.access("slurm-7", "j1a", "j1b")
    got = lab.prove([slurm])  # j1b is a member on j1a only: its own table has no slot
    bad = [o for o in got.observations if o.verdict != "ok" and o.probe.target == "j1a"]
    assert not bad, bad[:5]

    kept = runner.invoke(net, [*base, "--yes"])  # both schedulers: Slurm cannot say here
    assert kept.exit_code == 3, kept.output
    assert "slurm slots kept: squeue could not say" in kept.output
    assert nft.active_jobs(host) == {"slurm-7": 2}
    jobs.end(host, "slurm-7")
    assert runner.invoke(net, base).output.startswith("no stale job slot")


def test_a_release_meant_for_the_previous_holder_changes_nothing(lab: Lab) -> None:
    """Slot 0 freed and taken by a new job between a collector's read and its batch:
    the batch names the old holder's tag, so nft refuses all of it."""
    lab.reset()
    host = lab.host("j1a")
    jobs.start(host, lab.policy, "local-1", lab.addresses("j1a", "out"), known=None)
    jobs.end(host, "local-1")
    jobs.start(host, lab.policy, "local-2", lab.addresses("j1a", "j2b"), known=None)
    before = nft.list_table(host)
    with pytest.raises(nft.NftError, match="nothing changed"):
        nft.run_batch(host, release_batch({0: "local-1"}))
    assert nft.list_table(host) == before and nft.active_jobs(host) == {"local-2": 0}
    assert nft.job_ended(host, "local-1").action == "absent"
    assert nft.job_ended(host, "local-2").action == "ended"
