"""The thresholds of the workload checks, as pure functions (tested by tables).

A rate is judged against an absolute floor (the site's, else a fraction of the KB's
published figure) and against the node's median of the same measurement: a GPU 10% below
its peers fails even above the floor (imbue's and DCGM's practice of comparing GPUs of one
node). Without a floor (a model the KB does not know, a figure it lacks) the result is
unknown, never pass: a measured rate alone says nothing of health.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from dolmen.checks.model import Status
from dolmen.frozen import frozen

# GB/s per lane and direction after line coding: Gen1-2 8b/10b, Gen3-5 128b/130b, Gen6
# PAM4 with FLIT (PCI-SIG base specifications: 2.5, 5, 8, 16, 32, 64 GT/s).
PCIE_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}


@frozen
class Judged:
    """A status and the words that say why."""

    status: Status
    why: str


def floor_of(published: float | None, fraction: float, site: float | None) -> float | None:
    """The absolute floor: the site's figure, else ``fraction`` of the published one."""
    if site is not None:
        return float(site)
    return published * fraction if published else None


def judge_rate(
    measured: float,
    *,
    floor: float | None,
    median: float | None,
    peers: int,
    below_median: float,
    unit: str,
) -> Judged:
    """Fail under the floor, or ``below_median`` (0.10) under the median of ``peers`` (>1)
    same measurements; unknown with no floor; pass otherwise."""
    if not math.isfinite(measured) or measured <= 0:
        return Judged(Status.UNKNOWN, "no rate was measured")
    if floor is not None and measured < floor:
        return Judged(Status.FAIL, f"below the floor of {floor:,.1f} {unit}")
    if peers > 1 and median and measured < (1.0 - below_median) * median:
        short = 1.0 - measured / median
        return Judged(Status.FAIL, f"{short:.0%} below the node's median of {median:,.1f} {unit}")
    if floor is None:
        return Judged(Status.UNKNOWN, "no published figure: KB or site")
    return Judged(Status.PASS, f"above the floor of {floor:,.1f} {unit}")


def flops(tflops: float) -> str:
    """A rate a person reads: ``612.3 TFLOP/s``, or ``5.81 GFLOP/s`` below one TFLOP/s (a
    CPU run)."""
    if tflops >= 1.0:
        return f"{tflops:,.1f} TFLOP/s"
    return f"{tflops * 1000:,.2f} GFLOP/s"


def pcie_gbps(gen: int | None, width: int | None) -> float | None:
    """A PCIe link's raw rate per direction, GB/s; None for an unknown gen or width."""
    if gen is None or width is None or gen not in PCIE_LANE_GBPS or width <= 0:
        return None
    return PCIE_LANE_GBPS[gen] * width


def downtrained(link: Mapping[str, int] | None) -> str:
    """Why the link under load is below its own maximum as the driver reports it (the
    lesser of the GPU's and the slot's), "" when it is not or when that is unknown."""
    if not link:
        return ""
    gen, width = link.get("gen"), link.get("width")
    gmax, wmax = link.get("gen_max"), link.get("width_max")
    if gen is not None and gmax is not None and gen < gmax:
        return f"Gen{gen} under load, the link can do Gen{gmax}"
    if width is not None and wmax is not None and width < wmax:
        return f"x{width} under load, the link can do x{wmax}"
    return ""


def worst(statuses: list[Status]) -> Status:
    """The status that decides a subject's outcome: fail, unknown, warn, pass, skip."""
    for s in (Status.FAIL, Status.ERROR, Status.UNKNOWN, Status.WARN, Status.PASS):
        if s in statuses:
            return s
    return Status.SKIP
