"""Where a local job's ranks go: GPUs per rank group, waiting, shrinking, refusing."""

from __future__ import annotations

import pytest

from dolmen.errors import UsageError
from dolmen.jobs.local.placement import NoRoom, Placement, place
from dolmen.jobs.spec import JobSpec


def spec(**kw: object) -> JobSpec:
    return JobSpec(name="t", command=("true",), **kw)  # type: ignore[arg-type]


def test_two_nodes_of_four_gpus() -> None:
    p = place(spec(nodes=2, gpus_per_node=4), list(range(8)), {})
    assert isinstance(p, Placement)
    assert [(s.rank, s.node, s.local_rank, s.gpus) for s in p.slots] == [
        (0, 0, 0, (0,)),
        (1, 0, 1, (1,)),
        (2, 0, 2, (2,)),
        (3, 0, 3, (3,)),
        (4, 1, 0, (4,)),
        (5, 1, 1, (5,)),
        (6, 1, 2, (6,)),
        (7, 1, 3, (7,)),
    ]


def test_cpu_job_and_shared_gpus() -> None:
    p = place(spec(nodes=2, procs_per_node=3), [], {})
    assert isinstance(p, Placement) and p.world_size == 6 and p.gpus == ()
    p = place(spec(gpus_per_node=2, procs_per_node=4), [0, 1], {})
    assert isinstance(p, Placement) and [s.gpus for s in p.slots] == [(0,), (1,), (0,), (1,)]


def test_skips_busy_gpus_and_waits_when_short() -> None:
    p = place(spec(gpus_per_node=2), [0, 1, 2, 3], {0: 9})
    assert isinstance(p, Placement) and p.gpus == (1, 2)
    r = place(spec(gpus_per_node=4), [0, 1, 2, 3], {0: 9, 3: 11})
    assert isinstance(r, NoRoom) and r.wait
    assert r.reason == "waiting for GPUs: 2 free of 4 needed (held by job 9, 11)"


def test_too_few_healthy_gpus_refuses_or_shrinks() -> None:
    r = place(spec(nodes=2, gpus_per_node=4), [0, 2, 3, 4, 5, 6, 7], {})
    assert isinstance(r, NoRoom) and not r.wait
    p = place(spec(nodes=2, gpus_per_node=4, elastic=True), [0, 2, 3, 4, 5, 6, 7], {})
    assert isinstance(p, Placement) and p.nodes == 1 and p.gpus == (0, 2, 3, 4)
    r = place(spec(nodes=3, gpus_per_node=4, elastic=True, min_nodes=2), [0, 1, 2, 3, 4], {})
    assert isinstance(r, NoRoom) and "needs 8 healthy GPUs" in r.reason


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"nodes": 0}, "--nodes must be at least 1"),
        ({"gpus_per_node": -1}, "--gpus-per-node"),
        ({"procs_per_node": 0}, "--procs-per-node"),
        ({"gpus_per_node": 4, "procs_per_node": 3}, "cannot share 4 GPUs evenly"),
        ({"min_nodes": 3, "nodes": 2}, "min_nodes"),
        ({"time_limit_s": 0}, "--time-limit"),
        ({"name": "bad name!"}, "job name"),
        ({"command": ()}, "no command"),
    ],
)
def test_spec_check_names_the_field(kw: dict[str, object], words: str) -> None:
    values: dict[str, object] = {"name": "t", "command": ("true",), **kw}
    with pytest.raises(UsageError, match=words):
        JobSpec(**values).check()  # type: ignore[arg-type]
