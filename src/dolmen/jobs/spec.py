"""What a user asks to run: a command or an image on N nodes with G GPUs each."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from dolmen.errors import UsageError

# Kubernetes object names and Slurm job names both accept this; longer names are cut
# by the backends that need it (a DNS label is at most 63 characters).
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


@dataclass(frozen=True)
class JobSpec:
    """A training job, independent of where it runs.

    ``gpus_per_node == 0`` is a CPU job; ``procs_per_node`` then says how many
    ranks each node runs (default: one per GPU, or 1 without GPUs).
    ``elastic``: after a fault the job may restart on fewer nodes (never fewer
    than ``min_nodes``) when there is not enough healthy hardware for all of them.
    """

    name: str
    command: tuple[str, ...]
    nodes: int = 1
    gpus_per_node: int = 0
    procs_per_node: int | None = None
    image: str | None = None
    checkpoint_dir: str | None = None
    max_restarts: int = 0
    time_limit_s: int | None = None
    account: str | None = None
    user: str | None = None
    workdir: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    exclude_nodes: tuple[str, ...] = ()
    partition: str | None = None
    elastic: bool = False
    min_nodes: int = 1

    @property
    def ranks_per_node(self) -> int:
        """Processes per node: ``procs_per_node``, else one per GPU, else 1."""
        return self.procs_per_node or self.gpus_per_node or 1

    @property
    def world_size(self) -> int:
        """Total number of ranks."""
        return self.nodes * self.ranks_per_node

    @property
    def total_gpus(self) -> int:
        """GPUs the job holds while it runs (what quotas count)."""
        return self.nodes * self.gpus_per_node

    def check(self) -> None:
        """Refuse a spec no backend could run, naming the field (UsageError)."""
        if not NAME.match(self.name):
            raise UsageError(
                f"job name {self.name!r} is not valid",
                hint="use letters, digits, '-', '_' or '.', starting with a letter or digit",
            )
        if not self.command and not self.image:
            raise UsageError("no command given", hint="put the command after `--`")
        for label, value, low in (
            ("--nodes", self.nodes, 1),
            ("--gpus-per-node", self.gpus_per_node, 0),
            ("--max-restarts", self.max_restarts, 0),
            ("min_nodes", self.min_nodes, 1),
        ):
            if value < low:
                raise UsageError(f"{label} must be at least {low}, not {value}")
        if self.procs_per_node is not None and self.procs_per_node < 1:
            raise UsageError(f"--procs-per-node must be at least 1, not {self.procs_per_node}")
        if self.time_limit_s is not None and self.time_limit_s < 1:
            raise UsageError("--time-limit must be at least one second")
        if self.min_nodes > self.nodes:
            raise UsageError(f"min_nodes ({self.min_nodes}) is above --nodes ({self.nodes})")
        g, r = self.gpus_per_node, self.ranks_per_node
        if g and g % r and r % g:
            raise UsageError(
                f"{r} processes per node cannot share {g} GPUs evenly",
                hint="make --procs-per-node divide --gpus-per-node, or the other way round",
            )
