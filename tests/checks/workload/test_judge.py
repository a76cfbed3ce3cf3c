"""The workload thresholds as tables: floor, outlier against the median, no figure."""

from __future__ import annotations

import pytest

from dolmen.checks.model import Status
from dolmen.checks.workload.judge import (
    downtrained,
    floor_of,
    flops,
    judge_rate,
    pcie_gbps,
    worst,
)

U = "TFLOP/s"


@pytest.mark.parametrize(
    ("measured", "floor", "median", "peers", "status", "words"),
    [
        (700.0, 593.4, 700.0, 8, Status.PASS, "above the floor of 593.4"),
        (500.0, 593.4, 700.0, 8, Status.FAIL, "below the floor of 593.4"),
        # above the floor, but 14% under its peers: fails (the outlier rule)
        (600.0, 593.4, 700.0, 8, Status.FAIL, "14% below the node's median of 700.0"),
        (640.0, 593.4, 700.0, 8, Status.PASS, "above the floor"),  # 8.6% below: inside 10%
        (600.0, 593.4, 700.0, 1, Status.PASS, "above the floor"),  # one GPU: no peers
        (600.0, None, 700.0, 8, Status.FAIL, "14% below the node's median"),  # unknown model
        (700.0, None, 700.0, 8, Status.UNKNOWN, "no published figure"),  # unknown model
        (700.0, None, None, 1, Status.UNKNOWN, "no published figure"),
        (0.0, 593.4, 700.0, 8, Status.UNKNOWN, "no rate was measured"),
        (float("nan"), 593.4, 700.0, 8, Status.UNKNOWN, "no rate was measured"),
        (float("inf"), 593.4, 700.0, 8, Status.UNKNOWN, "no rate was measured"),
    ],
)
def test_judge_rate(
    measured: float,
    floor: float | None,
    median: float | None,
    peers: int,
    status: Status,
    words: str,
) -> None:
    got = judge_rate(measured, floor=floor, median=median, peers=peers, below_median=0.1, unit=U)
    assert got.status is status
    assert words in got.why


@pytest.mark.parametrize(
    ("published", "fraction", "site", "floor"),
    [
        (989.0, 0.6, None, 593.4),
        (989.0, 0.6, 700, 700.0),  # the site's figure wins
        (None, 0.6, None, None),  # the KB does not know the model
        (None, 0.6, 300, 300.0),
        (0.0, 0.6, None, None),
    ],
)
def test_floor_of(
    published: float | None, fraction: float, site: float | None, floor: float | None
) -> None:
    assert floor_of(published, fraction, site) == pytest.approx(floor)


@pytest.mark.parametrize(
    ("gen", "width", "gbps"),
    [(5, 16, 63.008), (4, 16, 31.504), (3, 8, 7.88), (6, 16, 121.008), (7, 16, None)],
)
def test_pcie_gbps(gen: int, width: int, gbps: float | None) -> None:
    assert pcie_gbps(gen, width) == pytest.approx(gbps)


def test_pcie_gbps_needs_both() -> None:
    assert pcie_gbps(None, 16) is None and pcie_gbps(5, None) is None and pcie_gbps(5, 0) is None


@pytest.mark.parametrize(
    ("link", "words"),
    [
        ({"gen": 5, "width": 16, "gen_max": 5, "width_max": 16}, ""),
        ({"gen": 4, "width": 16, "gen_max": 5, "width_max": 16}, "Gen4 under load"),
        ({"gen": 5, "width": 8, "gen_max": 5, "width_max": 16}, "x8 under load"),
        ({"gen": 4, "width": 16}, ""),  # no maximum read: nothing to say
        (None, ""),
        ({}, ""),
    ],
)
def test_downtrained(link: dict[str, int] | None, words: str) -> None:
    got = downtrained(link)
    assert (words in got) if words else got == ""


def test_worst_and_flops() -> None:
    assert worst([Status.PASS, Status.UNKNOWN, Status.WARN]) is Status.UNKNOWN
    assert worst([Status.PASS, Status.FAIL]) is Status.FAIL
    assert worst([]) is Status.SKIP
    assert flops(612.34) == "612.3 TFLOP/s" and flops(0.00581) == "5.81 GFLOP/s"
