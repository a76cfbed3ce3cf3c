"""``dolmen fleet collective --slurm`` on the real test cluster (network namespaces): one
srun step, one gloo rank on each of two nodes meeting over the cluster's bridge, rank 0 on
the first node named; the bench document, its busbw chart and the per-size table; a CPU run
is measured only. Run under ``flock /work/coord/slurm.lock`` (fixed names)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dolmen.cli.main import main
from dolmen.report.bench.document import load_bench
from dolmen.workloads import collective
from tests.fleet import cluster as fleet_cluster
from tests.slurm.cluster import SlurmCluster

pytestmark = [pytest.mark.slurm]
pytest.importorskip("torch")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    with fleet_cluster.running(tmp_path_factory.mktemp("collective-lab")) as c:
        yield c


def _argv(c: SlurmCluster, out: Path, *more: str) -> list[str]:
    return ["fleet", "collective", "--slurm", "--prefix", str(c.client), "--out", str(out), *more]


def test_gloo_across_two_nodes(
    cluster: SlurmCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.restore()
    out = tmp_path / "run"
    code = main(_argv(cluster, out, "--device", "cpu", "--smoke", "--nodelist", "n3,n1"))
    said = capsys.readouterr()
    assert code == 0, said.out + said.err
    doc = load_bench(out / "bench.json")
    assert doc["host"] == "slurm:n3,n1" and doc["device"] == "cpu" and not doc["errors"]
    body = doc["results"]["collective"]
    assert body["nodes"] == ["n3", "n1"] and body["ranks_per_node"] == 1
    runs = {r["op"]: r for r in body["runs"]}
    assert set(runs) == {"all_reduce", "all_gather"}
    for op, r in runs.items():
        assert (r["world"], r["backend"]) == (2, "gloo")
        first = collective.sizes_for(op, 2, collective.SMOKE_SIZES)[0]
        assert r["points"][0]["bytes"] == first
        for p in r["points"]:  # the one formula: busbw = algbw x nccl-tests' factor
            assert p["time_us"] > 0
            assert p["busbw_gbps"] == pytest.approx(p["algbw_gbps"] * collective.bus_factor(op, 2))
    internode = body["internode"]
    assert internode["status"] == "skip" and "measured on CPU" in internode["why"]
    assert [r["node"] for r in internode["rails"]] == ["n3", "n1"]  # each node said its ports
    assert "all_reduce on 2 gloo ranks" in said.out
    assert "inter-node: skip: " in said.out
    assert "collective across n3, n1 (2 gloo ranks)" in said.err
    assert (out / "busbw.svg").exists() or "plots skipped" in said.out


def test_json_and_the_first_free_nodes(
    cluster: SlurmCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.restore()
    cluster.sl("scontrol", "update", "nodename=n1", "state=drain", "reason=test")
    try:
        code = main(_argv(cluster, tmp_path / "j", "--device", "cpu", "--smoke", "--json"))
        said = capsys.readouterr()
        assert code == 0, said.err
        doc = json.loads(said.out)
        assert doc["results"]["collective"]["nodes"] == ["n2", "n3"]  # n1 is drained
        assert main(_argv(cluster, tmp_path / "k", "--device", "cpu", "--nodelist", "n1,n2")) == 2
        assert "1 free: n1 IDLE" in capsys.readouterr().err
    finally:
        cluster.restore()
