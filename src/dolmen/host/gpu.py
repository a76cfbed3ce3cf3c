"""GPU inventory model (placeholder until the NVML / nvidia-smi readers land)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dolmen.host.base import Host


@dataclass(frozen=True)
class GpuInventory:
    """Placeholder."""

    source: str = "none"


def read_gpus(host: Host) -> GpuInventory:
    """Placeholder."""
    return GpuInventory()
