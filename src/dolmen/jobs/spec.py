"""What a user asks to run: a command or an image on N nodes with G GPUs each."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class JobSpec:
    """A training job, independent of where it runs.

    ``gpus_per_node == 0`` is a CPU job; ``procs_per_node`` then says how many
    ranks each node runs (default: one per GPU, or 1 without GPUs).
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
