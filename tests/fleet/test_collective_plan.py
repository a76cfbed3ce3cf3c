"""The pure half of ``fleet collective --slurm``: the nodes, the srun line, the tasks'
labelled lines read back into nccl-tests' bandwidths, and the inter-node figure (rails x
rate, the KB's rate where a port's is unread, the site's when set) with its judgement."""

from __future__ import annotations

import json

import pytest

from dolmen.errors import UsageError
from dolmen.facts.infiniband import IbPort
from dolmen.fleet import collective as fc
from dolmen.fleet import internode as fi
from dolmen.kb import load_kb
from dolmen.slurm.parse import NodeInfo
from dolmen.workloads import collective as single
from dolmen.workloads.collective_task import MARK, spec_from_arg


def _node(name: str, state: str = "IDLE", *flags: str, gpus: int | None = 8) -> NodeInfo:
    return NodeInfo(name, state, frozenset(flags), "", gpus, None)


def test_choose_takes_the_first_free_nodes_or_the_named_ones() -> None:
    nodes = [_node("n3"), _node("n1"), _node("n2", "IDLE", "DRAIN"), _node("n4", "ALLOCATED")]
    assert fc.choose(nodes, 2) == ("n1", "n3")
    assert fc.choose(nodes, 2, ("n3", "n1")) == ("n3", "n1")  # the order given: n3 is rank 0
    with pytest.raises(
        UsageError, match=r"2 allocatable node\(s\) needed, 1 free: n2 IDLE, n1 IDLE"
    ):
        fc.choose(nodes, 2, ("n2", "n1"))
    with pytest.raises(UsageError, match="not nodes of the partition: n9"):
        fc.choose(nodes, 2, ("n1", "n9"))
    with pytest.raises(UsageError, match="needs two or more"):
        fc.choose(nodes, 1)


def test_the_plan_is_one_task_per_rank_and_the_spec_travels_as_one_argument() -> None:
    p = fc.plan(("n1", "n2"), device="cuda", per_node=8, budget_s=15, partition="gpu", python="/py")
    argv = list(p.argv)
    assert argv[:5] == [
        "srun",
        "--nodes=2",
        "--ntasks=16",
        "--ntasks-per-node=8",
        "--nodelist=n1,n2",
    ]
    for flag in ("--label", "--kill-on-bad-exit=1", "--partition=gpu", "--gpus-per-node=8"):
        assert flag in argv
    assert argv[-4:-1] == ["/py", "-m", "dolmen.workloads.collective_task"]
    spec = spec_from_arg(argv[-1])
    assert spec == p.spec and spec.backend == "nccl" and spec.per_node == 8
    assert spec.sizes["all_reduce"][-1] == 1 << 30
    assert spec.sizes["all_gather"][0] == 64  # 4 B x 16 ranks: the first whole share
    cpu = fc.plan(("n1", "n2"), device="cpu", per_node=1, budget_s=15, smoke=True)
    assert cpu.spec.backend == "gloo" and not any(a.startswith("--gpus") for a in cpu.argv)
    assert cpu.spec.sizes["all_reduce"] == list(single.SMOKE_SIZES)


def test_the_tasks_lines_become_nccl_tests_bandwidths() -> None:
    lines = [
        f"0: {MARK} " + json.dumps(["node", "n1", 0]),
        f"1: {MARK} " + json.dumps(["node", "n2", 1]),
        f"0: {MARK} " + json.dumps(["rails", "n1", [], "missing"]),
        f"0: {MARK} " + json.dumps(["point", "all_reduce", 1 << 30, 5000.0]),
        f"0: {MARK} " + json.dumps(["point", "all_gather", 1 << 30, 5000.0]),
        f"0: {MARK} " + json.dumps(["point", "broadcast", 8, 1.0]),  # not an op of ours
        f"0: {MARK} " + json.dumps(["point", "all_reduce", "x", 1.0]),  # malformed
        f"1: {MARK} " + '["done", 1, null',  # cut off
        "0: some library talking",
        f"{MARK} " + json.dumps(["done", 0, None]),  # no label: not a task's line
        f"0: {MARK} " + json.dumps(["done", 0, "budget reached before all_gather at 8 bytes"]),
        f"1: {MARK} " + json.dumps(["error", 1, "RuntimeError: Connection refused"]),
    ]
    out = fc.read_lines("\n".join(lines), world=2)
    (ar,) = out.points["all_reduce"]
    assert (ar.algbw_gbps, ar.busbw_gbps) == single.bandwidths("all_reduce", 1 << 30, 5000.0, 2)
    (ag,) = out.points["all_gather"]
    assert ag.busbw_gbps == pytest.approx(ag.algbw_gbps * 0.5)
    assert out.ports == {"n1": ([], "missing")}
    assert out.done == {0} and out.stopped.startswith("budget reached")  # type: ignore[union-attr]
    assert out.errors == ["rank 1: RuntimeError: Connection refused"]


def _port(dev: str, rate: float | None, hca: str = "MT4129", state: str = "ACTIVE") -> IbPort:
    return IbPort(dev, 1, state, "LinkUp", rate, None, "InfiniBand", hca_type=hca)


def test_rails_are_the_largest_group_of_active_ports_at_their_rates() -> None:
    hcas = load_kb().hcas
    eight = [_port(f"mlx5_{i}", 400.0) for i in range(8)]
    front = [_port("mlx5_8", 100.0, "MT4125"), _port("mlx5_9", 100.0, "MT4125")]
    down = [_port("mlx5_10", 400.0, state="DOWN")]
    r = fi.node_rails("n1", eight + front + down, hcas)
    assert (r.ports, r.gbps) == (8, 400.0) and r.why == "n1: 8 x 400 Gb/s (MT4129)"
    unread = fi.node_rails("n2", [_port("mlx5_0", None), _port("mlx5_1", None)], hcas)
    assert unread.gbps == 100.0  # the KB's ConnectX-7 top rate, 400 Gb/s each
    assert fi.node_rails("n3", [], hcas, "missing").why == "n3: missing"
    assert fi.node_rails("n4", down, hcas).gbps is None
    assert fi.node_rails("n5", [_port("x_0", None, "MT9999")], hcas).why.startswith(
        "n5: no rate read for ib:x_0/1"
    )


def test_the_figure_is_the_slowest_node_or_the_sites() -> None:
    fast = fi.Rails("n1", 8, 400.0, "n1: 8 x 400 Gb/s (MT4129)")
    slow = fi.Rails("n2", 4, 200.0, "n2: 4 x 400 Gb/s (MT4129)")
    assert fi.figure([fast, slow], None, None) == (
        200.0,
        "n2: 4 x 400 Gb/s (MT4129) (the slowest node)",
    )
    assert fi.figure([fast, slow], 8, 400) == (
        400.0,
        "[validate] expected_ib_ports x expected_ib_rate = 8 x 400 Gb/s",
    )
    assert fi.figure([fast, fi.Rails("n2", 0, None, "n2: missing")], None, None) == (
        None,
        "n2: missing",
    )
    assert fi.figure([], None, None)[0] is None


def _run(nbytes: int, busbw: float, backend: str = "nccl") -> single.Run:
    return single.Run("all_reduce", 16, backend, (single.Point(nbytes, 1.0, busbw / 1.875, busbw),))


@pytest.mark.parametrize(
    ("run", "device", "figure", "status", "says"),
    [
        (_run(1 << 30, 350.0), "cuda", 400.0, "pass", "at least 280.0 GB/s: 0.7 of 400.0"),
        (_run(1 << 30, 150.0), "cuda", 400.0, "fail", "below 280.0 GB/s"),
        (_run(1 << 20, 350.0), "cuda", 400.0, "unknown", "the figure is for 1 GiB"),
        (_run(1 << 30, 350.0), "cuda", None, "unknown", "no inter-node figure"),
        (_run(1 << 26, 0.5, "gloo"), "cpu", None, "skip", "measured on CPU"),
        (None, "cuda", 400.0, "unknown", "no all_reduce size was measured"),
    ],
)
def test_judge(
    run: single.Run | None, device: str, figure: float | None, status: str, says: str
) -> None:
    j = fi.judge(run, device, figure, "how")
    assert j.status == status and says in j.why, j.why


def test_port_of_reads_back_what_a_task_sent_and_nothing_else() -> None:
    p = fi.port_of({"device": "mlx5_0", "port": 1, "state": "ACTIVE", "rate_gbps": 400})
    assert p is not None and p.rate_gbps == 400.0 and p.phys_state is None
    assert fi.port_of({"device": "mlx5_0"}) is None
    assert fi.port_of({"device": "mlx5_0", "port": "one"}) is None


def test_the_table_has_nccl_tests_columns_and_the_share_of_the_floor() -> None:
    result = single.CollectiveResult("cuda", (), (_run(1 << 30, 350.0),), None)
    lines = fc.table(result, 280.0)
    assert lines[0] == "all_reduce on 16 nccl ranks"
    assert lines[1].split() == ["size", "time_us", "algbw", "GB/s", "busbw", "GB/s", "of", "floor"]
    assert lines[2].split()[0] == "1G" and lines[2].split()[-1] == "1.25"


def test_the_document_holds_to_the_bench_schema_both_ways() -> None:
    import jsonschema

    from dolmen.report.bench.document import bench_document, bench_schema, schema_errors

    result = single.CollectiveResult("cuda", (), (_run(1 << 30, 350.0),), None)
    j = fi.judge(result.run("all_reduce"), "cuda", 400.0, "how")
    rails = [{"node": "n1", "ports": 8, "gbps": 400.0, "why": "n1: 8 x 400 Gb/s (MT4129)"}]
    body = fc.document_body(result, ("n1", "n2"), 8, j.to_json(), rails)
    doc = bench_document(
        host="slurm:n1,n2",
        started="2026-12-01T16:30:05Z",
        device="cuda",
        wall_s=20.0,
        results={"collective": body},
        errors={},
    )
    assert schema_errors(doc) == []
    jsonschema.validators.validator_for(bench_schema())(bench_schema()).validate(doc)
    assert doc["results"]["collective"]["internode"]["status"] == "pass"
    body["internode"]["status"] = "maybe"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, bench_schema())
