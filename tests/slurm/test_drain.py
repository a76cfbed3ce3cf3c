"""The drain contract on the real cluster: dolmen drains with a reason naming the checks,
resumes only what it drained, and never touches a node someone else drained."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dolmen.checks.model import Finding, Status
from dolmen.checks.verdict import Verdict
from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from dolmen.jobs.backend import JobState
from dolmen.jobs.spec import JobSpec
from dolmen.slurm.client import SlurmClient
from dolmen.slurm.drain import drain_if_unhealthy
from tests.slurm.cluster import SlurmCluster
from tests.slurm.config import HEALTH_CHECK_INTERVAL_S, set_health
from tests.slurm.helpers import backend, require_xid_detected, wait_for

pytestmark = [pytest.mark.slurm]


def _verdict(status: Status | None) -> Verdict:
    findings = ()
    if status is not None:
        findings = (
            Finding(
                check="gpu.health.lost",
                category="gpu",
                status=status,
                subject="gpu:00000000:0A:00.0",
                summary="GPU has fallen off the bus",
                remedy="drain, reset, RMA",
                evidence={},
            ),
        )
    return Verdict(
        host="n1", level="quick", findings=findings, started="2026-01-01T00:00:00Z", duration_s=0
    )


def _apply(c: SlurmCluster, node: str, status: Status | None) -> str:
    client = SlurmClient(LiveHost(), prefix=c.client_prefix)
    return drain_if_unhealthy(TreeHost(c.tree("n1")), _verdict(status), node, client=client)


def test_unhealthy_drains_with_the_failed_check_then_healthy_resumes(
    idle_cluster: SlurmCluster,
) -> None:
    c = idle_cluster
    did = _apply(c, "n1", Status.FAIL)
    assert did.startswith("drained n1: dolmen: unhealthy: gpu.health.lost")
    assert c.node_states()["n1"] == "drain"
    assert c.node_reason("n1") == "dolmen: unhealthy: gpu.health.lost gpu:00000000:0A:00.0"
    assert _apply(c, "n1", Status.FAIL).startswith("n1 already drained")
    assert _apply(c, "n1", Status.UNKNOWN).startswith("n1 undecided")
    assert c.node_states()["n1"] == "drain"
    assert _apply(c, "n1", Status.WARN).startswith("resumed n1")
    wait_for(lambda: c.node_states()["n1"] == "idle", 10, "n1 idle")
    # the drain and the resume are audit events; the no-op runs are not
    from dolmen.audit.reader import read_entries
    from dolmen.audit.settings import audit_settings

    events = [e.event for e in read_entries(audit_settings().path) if e.event is not None]
    mine = [
        e for e in events if e.target == "slurm-node:n1" and e.details.get("phase") == "outcome"
    ]
    assert [e.action for e in mine][-2:] == ["nodes.drain", "nodes.resume"]
    assert mine[-2].details["reason"].startswith("dolmen: unhealthy: gpu.health.lost")


def test_a_node_someone_else_drained_is_never_resumed_nor_overwritten(
    idle_cluster: SlurmCluster,
) -> None:
    c = idle_cluster
    c.sl("scontrol", "update", "nodename=n2", "state=drain", "reason=admin: replace fan")
    assert _apply(c, "n2", Status.FAIL).startswith("left n2 alone: drained by someone else")
    assert c.node_reason("n2") == "admin: replace fan"
    assert _apply(c, "n2", None) == "n2 healthy, nothing to do"
    assert c.node_states()["n2"] == "drain"
    assert c.node_reason("n2") == "admin: replace fan"


def test_an_unknown_node_is_reported_not_an_error(idle_cluster: SlurmCluster) -> None:
    assert "not a node of this Slurm cluster" in _apply(idle_cluster, "n9", Status.FAIL)


def test_health_check_program_resumes_only_what_dolmen_drained(
    idle_cluster: SlurmCluster, tmp_path: Path
) -> None:
    c = idle_cluster
    c.sl("scontrol", "update", "nodename=n2", "state=drain", "reason=dolmen: unhealthy: old")
    c.sl("scontrol", "update", "nodename=n3", "state=drain", "reason=admin: bios update")
    # slurmd runs dolmen-slurm-healthcheck on every node each interval;
    # the trees are healthy now
    wait_for(
        lambda: c.node_states()["n2"] == "idle",
        HEALTH_CHECK_INTERVAL_S * 3,
        "the health check to resume n2",
    )
    assert c.node_states()["n3"] == "drain"
    assert c.node_reason("n3") == "admin: bios update"
    log = (c.lab / "logs" / "hooks-n2.log").read_text()
    assert "resumed n2 (was: dolmen: unhealthy: old)" in log


def test_validate_slurm_applies_the_same_contract(idle_cluster: SlurmCluster) -> None:
    """`dolmen validate --level quick --slurm` (what README shows) does what the health
    check program does: here it resumes a node dolmen drained, from a healthy tree."""
    c = idle_cluster
    c.sl("scontrol", "update", "nodename=n1", "state=drain", "reason=dolmen: unhealthy: old")
    res = c.sl(
        "env",
        "SLURMD_NODENAME=n1",
        sys.executable,
        "-m",
        "dolmen.cli.main",
        "validate",
        "--level",
        "quick",
        "--slurm",
        "--from",
        str(c.tree("n1")),
        check=False,
        timeout=60,
    )
    assert "resumed n1 (was: dolmen: unhealthy: old)" in res.stderr, res.stderr[-2000:]
    wait_for(lambda: c.node_states()["n1"] == "idle", 10, "n1 idle")


def test_prolog_on_an_unhealthy_node_drains_it_and_the_job_runs_elsewhere(
    idle_cluster: SlurmCluster,
) -> None:
    c = idle_cluster
    require_xid_detected(c)
    set_health(c, "n1", healthy=False)  # the scheduler tries n1 first (lowest name)
    b = backend(c)
    job = b.submit(JobSpec(name="pre", command=("true",), nodes=1, gpus_per_node=4))
    wait_for(lambda: b.status(job.job_id).state.done, 60, "the job to finish elsewhere")
    final = b.status(job.job_id)
    assert final.state is JobState.COMPLETED
    assert final.nodes and "n1" not in final.nodes
    # drained by the prolog (or by the health check if it ran first): dolmen's reason,
    # never Slurm's "Prolog error"
    assert c.node_reason("n1").startswith("dolmen: unhealthy: gpu.xid")
    assert c.node_states()["n1"] == "drain"
