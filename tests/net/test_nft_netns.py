"""The nftables target on a real kernel, inside namespaces this module creates
(conftest.py): who reaches what, set updates, atomic batches, rollback, crash recovery."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dolmen.net import nft
from dolmen.net.model import parse_policy
from dolmen.net.nft_change import apply_policy, pending, plan_policy, rollback_policy
from dolmen.net.role import host_role
from dolmen.tune.journal_view import State
from dolmen.tune.settings.nft_io import add_form
from tests.net.conftest import MEMBER, MGMT, OUTSIDER, Cluster

pytestmark = pytest.mark.netns

SRC = Path(__file__).resolve().parents[2] / "src"
POLICY = f"""\
[policy]
name = "lab"
max_jobs = 4
log_rate = "5/second"

[management]
from = ["{MGMT}"]
services = {{ ssh = 22, slurm = "6817-6819" }}

[jobs]
tcp = [29500, "40000-40100"]
udp = 29500

[job.static1]
members = ["10.77.0.1", "{MEMBER}"]
"""
OTHER = POLICY.replace('name = "lab"', 'name = "lab2"').replace("29500, ", "29600, ")


@pytest.fixture
def srv(cluster: Cluster, dolmen_dirs: Path) -> Cluster:
    cluster.reset()
    return cluster


def _apply(c: Cluster, text: str = POLICY) -> None:
    res = apply_policy(c.srv, plan_policy(c.srv, parse_policy(text), host_role(c.srv)))
    assert res.ok, res.error


def _table(c: Cluster) -> list[dict[str, object]] | None:
    live = nft.list_table(c.srv)
    return None if live is None else add_form(live)


def test_members_reach_the_job_ports_and_nobody_else_reaches_anything(srv: Cluster) -> None:
    _apply(srv)
    got = srv.probe(
        (MEMBER, 29500, "tcp"), (MEMBER, 40050, "tcp"), (MEMBER, 29500, "udp"),
        (OUTSIDER, 29500, "tcp"), (OUTSIDER, 40050, "tcp"), (OUTSIDER, 29500, "udp"),
        (MGMT, 22, "tcp"), (MEMBER, 22, "tcp"), (OUTSIDER, 22, "tcp"),
        (MEMBER, 9999, "tcp"), (MGMT, 29500, "tcp"),
    )  # fmt: skip
    assert got == ["open", "open", "open", "dropped", "dropped", "dropped",
                   "open", "dropped", "dropped", "dropped", "dropped"]  # fmt: skip
    counted = {rule: p for _, rule, p, _ in nft_counters(srv)}
    assert counted["default deny"] >= 7 and counted["management ip tcp"] >= 1
    assert counted["log dropped"] >= 1  # bounded: 5/second, burst 5


def nft_counters(c: Cluster) -> list[tuple[str, str, int, int]]:
    from dolmen.tune.settings.nft_io import counters

    return counters(nft.list_table(c.srv) or [])


def test_a_job_starting_and_ending_is_one_set_update_that_grants_and_revokes(
    srv: Cluster,
) -> None:
    _apply(srv)
    policy = parse_policy(POLICY)
    rules_before = [o for o in _table(srv) or [] if "rule" in o]
    assert srv.probe((OUTSIDER, 29500, "tcp")) == ["dropped"]
    up = nft.job_started(srv.srv, "4242", [OUTSIDER, "10.1.0.9"], policy=policy)
    assert up.slot == 0 and nft.active_jobs(srv.srv) == {"4242": 0}
    assert all("rule" not in cmd.get("add", {}) for cmd in up.batch["nftables"])
    assert srv.probe((OUTSIDER, 29500, "tcp"), (OUTSIDER, 22, "tcp")) == ["open", "dropped"]
    second = nft.job_started(srv.srv, "4243", ["10.2.0.1"], policy=policy)
    assert second.slot == 1
    assert [o for o in _table(srv) or [] if "rule" in o] == rules_before  # no rule touched
    down = nft.job_ended(srv.srv, "4242")
    assert down.action == "ended" and srv.probe((OUTSIDER, 29500, "tcp")) == ["dropped"]
    assert nft.job_ended(srv.srv, "4242").action == "absent"
    assert nft.active_jobs(srv.srv) == {"4243": 1}
    srv.reset()
    with pytest.raises(nft.NftError, match="no inet dolmen table"):
        nft.job_started(srv.srv, "4244", [OUTSIDER], policy=policy)


def test_a_batch_with_one_bad_element_changes_nothing(srv: Cluster) -> None:
    _apply(srv)
    before = _table(srv)
    policy = parse_policy(POLICY)
    good = nft.job_batch(policy.access("77", [OUTSIDER]), 2)["nftables"]
    bad = {"add": {"element": {"family": "inet", "table": "dolmen", "name": "j2_v4",
                               "elem": [{"concat": ["10.0.0.1", "tcp", 70000]}]}}}  # fmt: skip
    with pytest.raises(nft.NftError, match="nothing changed"):
        nft.run_batch(srv.srv, {"nftables": [*good, bad]})
    assert _table(srv) == before
    assert srv.probe((OUTSIDER, 29500, "tcp")) == ["dropped"]
    # a slot already taken: the create refuses the whole batch, the holder keeps it
    nft.job_started(srv.srv, "78", ["10.3.0.1"], policy=policy)
    held = _table(srv)
    with pytest.raises(nft.NftError):
        nft.run_batch(srv.srv, nft.job_batch(policy.access("79", [OUTSIDER]), 0))
    assert _table(srv) == held


def test_rollback_restores_the_exact_previous_ruleset(srv: Cluster) -> None:
    handmade = """table inet dolmen {
    set keep { type ipv4_addr; elements = { 10.9.9.9 }; }
    chain input {
        type filter hook input priority 0; policy accept;
        tcp dport 9999 counter accept comment "theirs"
    }
}
"""
    subprocess.run(["ip", "netns", "exec", srv.srv.netns, "nft", "-f", "-"], input=handmade,
                   text=True, check=True)  # fmt: skip
    before = _table(srv)
    _apply(srv)
    _apply(srv, OTHER)  # supersedes: a rollback undoes the last apply
    res = rollback_policy(srv.srv)
    assert res is not None and res.complete
    assert [o for o in _table(srv) or [] if "set" in o and o["set"]["name"] == "mgmt_tcp"]
    lab = _table(srv)
    again = rollback_policy(srv.srv)
    assert again is None  # the older journal was closed as superseded
    assert lab != before
    srv.reset()
    assert _table(srv) is None
    _apply(srv)
    rb = rollback_policy(srv.srv)
    assert rb is not None and rb.complete and _table(srv) is None
    subprocess.run(["ip", "netns", "exec", srv.srv.netns, "nft", "-f", "-"], input=handmade,
                   text=True, check=True)  # fmt: skip
    _apply(srv)
    assert rollback_policy(srv.srv) is not None
    assert _table(srv) == before


@pytest.mark.parametrize("point", ["1", "2"])
def test_a_crash_between_journal_and_apply_is_rolled_back(
    srv: Cluster, dolmen_dirs: Path, tmp_path: Path, point: str
) -> None:
    """Point 1: the live table journaled, nft not run yet; 2: the batch ran, not journaled."""
    policy = tmp_path / "lab.toml"
    policy.write_text(POLICY)
    _apply(srv, OTHER)
    assert rollback_policy(srv.srv) is not None
    before = _table(srv)
    env = {**os.environ, "PYTHONPATH": str(SRC), "DOLMEN_TUNE_CRASH_AT": point}
    cmd = [sys.executable, "-c", "import sys; from dolmen.cli.main import main; sys.exit(main())",
           "net", "apply", "--policy", str(policy), "--netns", srv.srv.netns, "--yes"]  # fmt: skip
    died = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert died.returncode == -9, died.stderr
    view = pending(srv.srv)
    assert view is not None and view.state is State.APPLYING
    env.pop("DOLMEN_TUNE_CRASH_AT")
    refused = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 3 and "interrupted" in refused.stderr
    cmd[cmd.index("apply")] = "rollback"
    cmd.remove("--policy")
    cmd.remove(str(policy))
    back = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert back.returncode == 0, back.stderr
    assert _table(srv) == before and pending(srv.srv) is None


@pytest.mark.parametrize("point", ["1", "2"])
def test_an_interrupted_apply_is_completed_by_net_recover(
    srv: Cluster, dolmen_dirs: Path, tmp_path: Path, point: str
) -> None:
    """tune's engine finishes the apply (the batch, the read-back, the commit) with
    ``net.recover`` events; the same journal is then active and rolls back as usual."""
    from dolmen.audit.reader import read_entries
    from dolmen.net.nft_change import verify_policy

    policy = tmp_path / "lab.toml"
    policy.write_text(POLICY)
    before = _table(srv)
    env = {**os.environ, "PYTHONPATH": str(SRC), "DOLMEN_TUNE_CRASH_AT": point}
    main = "import sys; from dolmen.cli.main import main; sys.exit(main())"
    net = [sys.executable, "-c", main, "net"]
    where = ["--netns", srv.srv.netns]
    apply = [*net, "apply", "--policy", str(policy), *where, "--yes"]
    died = subprocess.run(apply, env=env, capture_output=True, text=True, timeout=120)
    assert died.returncode == -9, died.stderr
    env.pop("DOLMEN_TUNE_CRASH_AT")

    def recover(*flags: str) -> subprocess.CompletedProcess[str]:
        cmd = [*net, "recover", *where, *flags]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)

    asked = recover()  # no terminal, no choice: both named, nothing done
    assert asked.returncode == 3 and "--rollback" in asked.stderr and "--complete" in asked.stderr
    both = recover("--rollback", "--complete")
    assert both.returncode == 2 and "contradict" in both.stderr
    done = recover("--complete", "--yes")
    assert done.returncode == 0, done.stderr
    assert "completed" in done.stdout
    view = pending(srv.srv)
    assert view is not None and view.state is State.ACTIVE
    host = srv.srv
    assert verify_policy(host, parse_policy(POLICY), host_role(host)).diff.empty
    assert srv.probe((MEMBER, 29500, "tcp"), (OUTSIDER, 29500, "tcp")) == ["open", "dropped"]
    events = [
        (e.event.action, e.event.outcome)
        for e in read_entries(dolmen_dirs / "audit" / "audit.log")
        if e.event is not None and e.event.action == "net.recover"
    ]
    assert events == [("net.recover", "unknown"), ("net.recover", "success")]
    assert recover("--complete").stdout.startswith("nothing to recover")
    assert rollback_policy(host) is not None and _table(srv) == before
