"""``dolmen fleet validate --slurm`` on the real 3-node test cluster (network namespaces),
one node with an injected Xid: one srun step validates all three, the store gets the
verdicts, the dry run drains nothing, ``--drain`` drains exactly the sick node with the
health check's contract (reason, audit events), and a node someone drained is left out."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dolmen.checks.model import Level
from dolmen.checks.suite import validate
from dolmen.checks.verdict import Health
from dolmen.cli.main import main
from dolmen.fleet.store import FleetStore
from dolmen.host.tree import TreeHost
from tests.fleet import cluster as fleet_cluster
from tests.slurm.cluster import SlurmCluster

pytestmark = [pytest.mark.slurm]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    with fleet_cluster.running(tmp_path_factory.mktemp("fleet-lab")) as c:
        yield c


@pytest.fixture
def trees(cluster: SlurmCluster, tmp_path: Path) -> Path:
    cluster.restore()
    dest = fleet_cluster.node_trees(cluster, tmp_path / "hosts")
    fleet_cluster.inject_xid(dest / "n2")
    if validate(TreeHost(dest / "n2"), level=Level.QUICK).health is not Health.UNHEALTHY:
        pytest.skip("no quick check flags the injected Xid 79")
    return dest


def test_dry_run_then_drain_the_node_with_the_xid(
    cluster: SlurmCluster, trees: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c, fleet = cluster, tmp_path / "fleet"
    assert main(fleet_cluster.fleet_argv(c, trees, fleet)) == 1  # a node is unhealthy
    out = capsys.readouterr().out
    lines = {line.split(":", 1)[0]: line for line in out.splitlines()}
    assert "n1 healthy, nothing to do" in lines["n1"]
    assert "n3 healthy, nothing to do" in lines["n3"]
    assert lines["n2"].startswith("n2: dolmen: unhealthy: gpu.")
    assert "would drain (dry run" in lines["n2"]
    assert c.node_states() == {"n1": "idle", "n2": "idle", "n3": "idle"}  # nothing changed
    store = FleetStore(fleet)
    assert store.nodes() == ["n1", "n2", "n3"]
    latest, problems = store.latest()
    assert not problems and latest["n2"].doc["status"] == "unhealthy"
    assert {latest[n].doc["status"] for n in ("n1", "n3")} == {"healthy"}
    (manifest,) = store.manifests()
    assert [a["action"] for a in manifest["actions"]] == ["none", "drain", "none"]
    assert not any(a["applied"] for a in manifest["actions"])

    assert main(fleet_cluster.fleet_argv(c, trees, fleet, "--drain")) == 1
    out = capsys.readouterr().out
    assert "n2: drained n2: dolmen: unhealthy: gpu." in out
    assert c.node_states()["n2"] == "drain"
    assert c.node_reason("n2").startswith("dolmen: unhealthy: gpu.")
    assert c.node_states()["n1"] == c.node_states()["n3"] == "idle"
    assert len(store.history("n2")) == 2  # history kept: one file per collection
    # the drain is an audit event, as the health check's are
    from dolmen.audit.reader import read_entries
    from dolmen.audit.settings import audit_settings

    events = [e.event for e in read_entries(audit_settings().path) if e.event is not None]
    mine = [e for e in events if e.target == "slurm-node:n2" and e.action == "nodes.drain"]
    assert [e.details.get("phase") for e in mine][-2:] == ["intent", "outcome"]

    # the next run: n2 is drained now, so Slurm starts no task there: left out, named
    assert main(fleet_cluster.fleet_argv(c, trees, fleet)) == 2
    out = capsys.readouterr().out
    assert "n2: not validated: Slurm shows it IDLE+DRAIN (dolmen: unhealthy: gpu." in out
    report = tmp_path / "report.json"
    assert main(["fleet", "report", str(fleet), "--json"]) == 1
    report.write_text(capsys.readouterr().out)
    doc = json.loads(report.read_text())
    assert [r["node"] for r in doc["nodes"] if r["status"] == "unhealthy"] == ["n2"]


def test_an_unknown_partition_names_the_valid_ones(
    cluster: SlurmCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(
        [
            "fleet",
            "validate",
            "--slurm",
            "--prefix",
            str(cluster.client),
            "--partition",
            "nope",
            "-o",
            str(tmp_path / "f"),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "no partition 'nope'" in err and "valid: gpu" in err


def test_a_dead_controller_is_one_line_and_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=1\n")
    rc = main(
        [
            "fleet",
            "validate",
            "--slurm",
            "--prefix",
            "env",
            "--prefix",
            f"SLURM_CONF={conf}",
            "-o",
            str(tmp_path / "f"),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 3 and err.startswith("dolmen: error:")
