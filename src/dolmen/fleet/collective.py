"""``dolmen fleet collective --slurm``: the all_reduce and all_gather sweeps across nodes,
as one Slurm job step (docs/fleet.md).

The plan is pure: which nodes (the first allocatable ones of the partition, or the
``--nodelist`` named), how many ranks on each (the GPUs per node with NCCL; one per node
with gloo on ``--device cpu``), the sizes and the srun command, one task per rank
(``dolmen.workloads.collective_task``), as ``fleet validate`` runs one task per node. The
run reads the tasks' ``--label``-ed lines back, turns rank 0's times into nccl-tests'
algbw and busbw through ``workloads.collective.bandwidths`` (the one formula), and
``internode`` holds the result to the rails' figure.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dolmen.errors import UsageError
from dolmen.fleet.slurm_run import allocatable, srun_step
from dolmen.report.bench.figures import human_bytes
from dolmen.slurm.client import SlurmClient
from dolmen.slurm.parse import NodeInfo
from dolmen.workloads import collective as single
from dolmen.workloads.collective_task import MARK, TaskSpec

TASK_MODULE = "dolmen.workloads.collective_task"


@dataclass(frozen=True)
class Plan:
    """Pure: the srun argv and what it runs."""

    argv: tuple[str, ...]
    spec: TaskSpec
    device: str


@dataclass
class Outcome:
    """What came back: rank 0's points, each node's ports, the first error, srun's exit."""

    points: dict[str, list[single.Point]] = field(default_factory=dict)
    ports: dict[str, tuple[list[Any], str]] = field(default_factory=dict)
    done: set[int] = field(default_factory=set)
    stopped: str | None = None
    errors: list[str] = field(default_factory=list)


def choose(nodes: Sequence[NodeInfo], count: int, nodelist: Sequence[str] = ()) -> tuple[str, ...]:
    """The ``count`` nodes to run on: those named (each must be allocatable), else the
    first allocatable ones by name; UsageError saying which are not and why."""
    if count < 2:
        raise UsageError(f"--nodes {count}: a collective across nodes needs two or more")
    known = {n.name: n for n in nodes}
    if nodelist:
        unknown = [n for n in nodelist if n not in known]
        if unknown:
            raise UsageError(
                f"not nodes of the partition: {', '.join(unknown)}; valid: {', '.join(known)}"
            )
        picked = [known[n] for n in dict.fromkeys(nodelist)]
    else:
        picked = sorted(nodes, key=lambda n: n.name)
    free = [n.name for n in picked if allocatable(n)]
    if len(free) < count or (nodelist and len(free) < len(picked)):
        busy = [f"{n.name} {n.state}" + (f" ({n.reason})" if n.reason else "") for n in picked]
        raise UsageError(
            f"{count} allocatable node(s) needed, {len(free)} free: {', '.join(busy)}",
            hint="name other nodes with --nodelist, or wait for these",
        )
    return tuple(free[:count] if not nodelist else free)


def plan(
    nodes: Sequence[str],
    *,
    device: str,
    per_node: int,
    budget_s: float,
    smoke: bool = False,
    partition: str | None = None,
    python: str | None = None,
    wait_s: int = 30,
    grace_s: float = single.NODES_GRACE_S,
) -> Plan:
    """Pure: the srun step that runs every rank (module docstring)."""
    backend = "nccl" if device == "cuda" else "gloo"
    world = len(nodes) * per_node
    cap = single.FULL_SIZES[-1] if device == "cuda" else single.CPU_MAX_BYTES
    sizes = single.SMOKE_SIZES if smoke else tuple(s for s in single.FULL_SIZES if s <= cap)
    warm, iters = (
        (single.SMOKE_WARMUP, single.SMOKE_ITERS) if smoke else (single.WARMUP, single.ITERS)
    )
    spec = TaskSpec(
        nodes=tuple(nodes),
        per_node=per_node,
        backend=backend,
        sizes={op: single.sizes_for(op, world, sizes) for op in single.OPS},
        budget_s=budget_s,
        grace_s=grace_s,
        warmup=warm,
        iters=iters,
    )
    argv = srun_step(
        nodes,
        per_node=per_node,
        kill_on_bad_exit=True,
        wait_s=wait_s,
        minutes=max(1, int((budget_s + grace_s) // 60) + 2),  # Slurm's own end of the step
        job_name="dolmen-collective",
        partition=partition,
        gpus_per_node=per_node if device == "cuda" else None,
    )
    argv += [python or sys.executable, "-m", TASK_MODULE, spec.to_arg()]
    return Plan(tuple(argv), spec, device)


def read_lines(stdout: str, world: int) -> Outcome:
    """Pure: the tasks' ``<task>: MARK <json>`` lines (srun --label) into an Outcome; the
    points are rank 0's, turned into bandwidths by the one formula."""
    out = Outcome(points={op: [] for op in single.OPS})
    for line in stdout.splitlines():
        _, sep, rest = line.partition(": ")
        if not sep or not rest.startswith(MARK + " "):
            continue
        try:
            msg = json.loads(rest[len(MARK) + 1 :])
        except ValueError:
            continue
        if isinstance(msg, list) and msg:
            _message(out, msg, world)
    return out


def _message(out: Outcome, msg: list[Any], world: int) -> None:
    kind = msg[0]
    try:
        if kind == "point" and msg[1] in out.points:
            op, nbytes, time_us = str(msg[1]), int(msg[2]), float(msg[3])
            bw = single.bandwidths(op, nbytes, time_us, world)
            out.points[op].append(single.Point(nbytes, time_us, *bw))
        elif kind == "rails" and isinstance(msg[2], list):
            out.ports[str(msg[1])] = (msg[2], str(msg[3]) if len(msg) > 3 else "")
        elif kind == "done":
            out.done.add(int(msg[1]))
            out.stopped = out.stopped or (str(msg[2]) if msg[2] else None)
        elif kind == "error":
            who = f"rank {msg[1]}" if msg[1] is not None else "a task"
            out.errors.append(f"{who}: {msg[2]}")
    except (IndexError, TypeError, ValueError):
        return  # a line cut short or not ours: the rank's "done" decides


def run(client: SlurmClient, p: Plan, timeout_s: float) -> tuple[single.CollectiveResult, Outcome]:
    """Run the step; the result (every measured size) and what the tasks said. An error
    of a rank, of srun or of the output is in ``Outcome.errors``."""
    res = client.run(p.argv, timeout=timeout_s)
    world = len(p.spec.nodes) * p.spec.per_node
    out = read_lines(res.stdout, world)
    missing = sorted(set(range(world)) - out.done)
    if missing and not out.errors:
        said = [ln for ln in res.stderr.splitlines() if "error" in ln.lower()]
        why = said[-1].strip() if said else (res.reason or f"srun exit {res.rc}")
        out.errors.append(f"rank {', '.join(map(str, missing))} did not finish: {why}")
    runs = tuple(
        single.Run(op, world, p.spec.backend, tuple(out.points[op]))
        for op in single.OPS
        if out.points.get(op)
    )
    result = single.CollectiveResult(p.device, (), runs, out.stopped)
    return result, out


def document_body(
    result: single.CollectiveResult,
    nodes: Sequence[str],
    per_node: int,
    internode: Mapping[str, Any],
    rails: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The ``collective`` result of the bench document, with where it ran and its figure."""
    body = result.to_json()
    body.update(nodes=list(nodes), ranks_per_node=per_node, internode=dict(internode))
    body["internode"]["rails"] = [dict(r) for r in rails]
    return body


def table(result: single.CollectiveResult, floor_gbps: float | None) -> list[str]:
    """Per op and size, nccl-tests' columns (size, time, algbw, busbw) and, where the run
    is held to a floor, busbw as a share of it."""
    lines: list[str] = []
    for r in result.runs:
        lines.append(f"{r.op} on {r.world} {r.backend} ranks")
        head = f"{'size':>10}  {'time_us':>10}  {'algbw GB/s':>10}  {'busbw GB/s':>10}"
        lines.append(head + ("  of floor" if floor_gbps and r.op == "all_reduce" else ""))
        for p in r.points:
            row = f"{human_bytes(p.bytes):>10}  {p.time_us:>10.1f}  {p.algbw_gbps:>10.3f}  "
            row += f"{p.busbw_gbps:>10.3f}"
            if floor_gbps and r.op == "all_reduce":
                row += f"  {p.busbw_gbps / floor_gbps:>8.2f}"
            lines.append(row)
    if result.stopped:
        lines.append(f"stopped: {result.stopped}")
    return lines
