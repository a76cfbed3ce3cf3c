"""Where a local job's ranks go: pure functions of the spec and the GPUs that are free.

The local backend runs every "node" of a job on this one host: node ``n`` is the
rank group ``n`` (GROUP_RANK), with its own share of the host's GPUs. That is
how a multi-node job is tested on one machine, and how a workstation runs one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dolmen.jobs.env import split_gpus
from dolmen.jobs.spec import JobSpec


@dataclass(frozen=True)
class Slot:
    """One rank's place: its global rank, node (rank group), local rank and GPUs."""

    rank: int
    node: int
    local_rank: int
    gpus: tuple[int, ...]


@dataclass(frozen=True)
class Placement:
    """Every rank of one attempt, and the GPUs the attempt holds."""

    nodes: int
    slots: tuple[Slot, ...]

    @property
    def gpus(self) -> tuple[int, ...]:
        """The GPUs held, in order, each once."""
        return tuple(dict.fromkeys(g for s in self.slots for g in s.gpus))

    @property
    def world_size(self) -> int:
        """Number of ranks."""
        return len(self.slots)


@dataclass(frozen=True)
class NoRoom:
    """Why a job cannot be placed now: ``wait`` (GPUs busy) or not at all (too few healthy)."""

    reason: str
    wait: bool


def place(
    spec: JobSpec,
    healthy: Sequence[int],
    busy: Mapping[int, int],
    *,
    nodes: int | None = None,
) -> Placement | NoRoom:
    """Place ``spec`` on the ``healthy`` GPUs that are not ``busy`` (GPU -> job holding it).

    ``nodes``: how many nodes this attempt wants (default all of the spec's). An
    elastic job shrinks to what the healthy GPUs allow, down to ``min_nodes``; a job
    that could fit once other jobs finish waits.
    """
    want = nodes or spec.nodes
    g = spec.gpus_per_node
    if g == 0:
        return _layout(spec, want, [])
    usable_nodes = len(healthy) // g
    if usable_nodes < want:
        floor = spec.min_nodes if spec.elastic else want
        if usable_nodes < floor:
            return NoRoom(
                f"needs {floor * g} healthy GPUs ({floor} x {g}), this host has {len(healthy)}",
                wait=False,
            )
        want = usable_nodes
    free = [x for x in healthy if x not in busy]
    if len(free) < want * g:
        holders = sorted({busy[x] for x in healthy if x in busy})
        return NoRoom(
            f"waiting for GPUs: {len(free)} free of {want * g} needed"
            f" (held by job {', '.join(map(str, holders))})",
            wait=True,
        )
    return _layout(spec, want, free[: want * g])


def _layout(spec: JobSpec, nodes: int, gpus: Sequence[int]) -> Placement:
    per = spec.ranks_per_node
    g = spec.gpus_per_node
    slots = []
    for node in range(nodes):
        shares = split_gpus(gpus[node * g : (node + 1) * g], per)
        for local, share in enumerate(shares):
            slots.append(Slot(node * per + local, node, local, share))
    return Placement(nodes, tuple(slots))
