"""One rank of a multi-node collective: what each Slurm task of ``dolmen fleet collective``
runs (``python -m dolmen.workloads.collective_task SPEC``).

``srun`` starts ``ranks per node`` tasks on each node; every task reads where it is from
Slurm's environment (``SLURMD_NODENAME``, ``SLURM_LOCALID``, ``SLURM_JOB_ID``) and takes
rank ``node's place in the spec's node list x ranks per node + local id``, so rank 0 is the
first node's first task whatever order Slurm numbers the tasks in, and the rendezvous is
that node's name (``tcp://<first node>:<port>``; the port is derived from the job id, as
Lightning's SLURM environment does, so two jobs on one node do not collide). Each rank then
lives ``collective_worker.run``: the same sweeps, sizes and timing as on one node.

What a task says goes to its stdout as lines ``MARK <json>`` (srun --label prefixes the
task id): first ``["node", name, rank]``, on each node's first rank ``["rails", name,
ports]`` (the RDMA ports the node's own facts show, for the inter-node figure), then the
worker's messages (``point`` on rank 0, ``done`` or ``error`` on every rank). Anything else
a library prints goes to stderr: fd 1 is pointed there once the mark's stream is saved.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from dolmen.frozen import frozen

MARK = "dolmen-collective"
PORT_BASE, PORT_SPAN = 15000, 10000  # the rendezvous port: base + job id % span


@frozen
class TaskSpec:
    """What every task of the step is given (one JSON argument)."""

    nodes: tuple[str, ...]
    per_node: int
    backend: str  # "nccl" | "gloo"
    sizes: Mapping[str, list[int]]
    budget_s: float
    grace_s: float
    warmup: int
    iters: int

    def to_arg(self) -> str:
        """The JSON argument the task reads back with ``spec_from_arg``."""
        return json.dumps(
            {
                "nodes": list(self.nodes),
                "per_node": self.per_node,
                "backend": self.backend,
                "sizes": {k: list(v) for k, v in self.sizes.items()},
                "budget_s": self.budget_s,
                "grace_s": self.grace_s,
                "warmup": self.warmup,
                "iters": self.iters,
            },
            separators=(",", ":"),
        )


def spec_from_arg(text: str) -> TaskSpec:
    """The spec of ``to_arg``; ValueError naming what is wrong."""
    try:
        raw = json.loads(text)
        return TaskSpec(
            nodes=tuple(str(n) for n in raw["nodes"]),
            per_node=int(raw["per_node"]),
            backend=str(raw["backend"]),
            sizes={str(k): [int(x) for x in v] for k, v in raw["sizes"].items()},
            budget_s=float(raw["budget_s"]),
            grace_s=float(raw["grace_s"]),
            warmup=int(raw["warmup"]),
            iters=int(raw["iters"]),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"not a collective task spec: {e}") from None


def place(spec: TaskSpec, env: Mapping[str, str]) -> tuple[str, int, int, int]:
    """(node, rank, local id, port) of this task from Slurm's environment; ValueError when
    the task is not one of the spec's (a node not in its list, a local id past per_node)."""
    node = env.get("SLURMD_NODENAME", "")
    if node not in spec.nodes:
        raise ValueError(f"node {node or '?'} is not one of {', '.join(spec.nodes)}")
    try:
        local, job = int(env["SLURM_LOCALID"]), int(env["SLURM_JOB_ID"])
    except (KeyError, ValueError):
        raise ValueError("SLURM_LOCALID and SLURM_JOB_ID must be set (run under srun)") from None
    if not 0 <= local < spec.per_node:
        raise ValueError(f"local id {local} is past {spec.per_node} ranks per node")
    rank = spec.nodes.index(node) * spec.per_node + local
    return node, rank, local, PORT_BASE + job % PORT_SPAN


class _Out:
    """The worker's outbox: each message a ``MARK <json>`` line on the saved stdout."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def put(self, msg: Sequence[Any]) -> None:
        self.stream.write(f"{MARK} {json.dumps(list(msg))}\n")
        self.stream.flush()


def rails(host_ports: Sequence[Any]) -> list[dict[str, Any]]:
    """The RDMA ports a node's facts show, as the fleet side reads them back."""
    keys = ("device", "port", "state", "phys_state", "rate_gbps", "link_layer", "hca_type")
    return [{k: getattr(p, k) for k in keys} for p in host_ports]


def main(argv: Sequence[str]) -> int:
    """The task: place itself, say where it is (and on local id 0 the node's RDMA ports),
    then run its rank; the exit code is the rank's."""
    out = _Out(os.fdopen(os.dup(1), "w"))
    os.dup2(2, 1)  # NCCL and gloo print: stderr, never the mark's stream
    try:
        spec = spec_from_arg(argv[0] if argv else "")
        node, rank, local, port = place(spec, os.environ)
    except ValueError as e:
        out.put(("error", None, str(e)))
        return 2
    out.put(("node", node, rank))
    if local == 0:
        from dolmen.facts import infiniband
        from dolmen.host import open_host

        with open_host(None) as host:
            facts = infiniband.collect(host)
        out.put(("rails", node, rails(facts.ports), facts.unread.get("ports", "")))
    from dolmen.workloads import collective_worker as worker

    world = len(spec.nodes) * spec.per_node
    gpus = tuple(range(spec.per_node)) * len(spec.nodes) if spec.backend == "nccl" else ()
    job = worker.Job(
        world,
        spec.backend,
        gpus,
        port,
        spec.sizes,
        spec.budget_s,
        time.monotonic() + spec.budget_s + spec.grace_s,
        spec.warmup,
        spec.iters,
        addr=spec.nodes[0],
    )
    return worker.run(rank, job, out)


if __name__ == "__main__":  # pragma: no cover - the task process
    raise SystemExit(main(sys.argv[1:]))
