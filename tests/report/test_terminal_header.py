"""The report's header: what the inventory and the coverage say, absence worded as absence."""

from __future__ import annotations

from typing import Any

import pytest

from dolmen.checks.verdict import Verdict
from dolmen.report.terminal.header import header

GPUS = {
    "state": "read",
    "count": 2,
    "seen": 2,
    "models": {"NVIDIA H100 80GB HBM3": 2},
    "driver": "580.105.08",
    "cuda": "13.0",
    "devices": [{"index": 0, "lost": False}, {"index": 1, "lost": True}],
}
IB = {
    "state": "read",
    "count": 3,
    "devices": 3,
    "rates": {"400": 2, "unread": 1},
    "states": {"ACTIVE": 2, "DOWN": 1},
    "lost_devices": ["mlx5_8"],
}


def _v(inventory: dict[str, Any], coverage: dict[str, dict[str, str]] | None = None) -> Verdict:
    return Verdict(
        "gpu01",
        "quick",
        (),
        "2026-12-01T00:00:00Z",
        0.1,
        source={"kind": "live"},
        coverage=coverage or {},
        inventory=inventory,
    )


CASES = {
    "a verdict without inventory (an old one) says only the host": (
        {},
        {"host": "gpu01 (live)"},
    ),
    "nothing loaded: not read, never none": (
        {k: {"state": "not read"} for k in ("host", "gpus", "ib", "nics")},
        {"GPUs": "not read", "IB": "not read", "NICs": "not read"},
    ),
    "a failed collector: unreadable with the reason": (
        {"gpus": {"state": "unreadable", "reason": "nvidia-smi timed out"}},
        {"GPUs": "unreadable: nvidia-smi timed out"},
    ),
    "GPUs listed, one lost; IB rates with one unread and a lost HCA": (
        {
            "gpus": GPUS,
            "ib": IB,
            "nics": {
                "state": "read",
                "count": 2,
                "states": {"up": 2},
                "speeds_mbps": {"100000": 2},
            },
        },
        {
            "GPUs": "2 x NVIDIA H100 80GB HBM3, driver 580.105.08, CUDA 13.0; 1 lost",
            "IB": "3 ports on 3 devices: 2 x 400 Gb/s, 1 rate unread; 2 ACTIVE, 1 DOWN; "
            "lost: mlx5_8",
            "NICs": "2: 2 up; 2 x 100 Gb/s",
        },
    ),
    "GPUs seen but not listed by the driver": (
        {"gpus": {"state": "read", "count": 0, "seen": 8, "error": "exit 9"}},
        {"GPUs": "8 seen, none listed by the driver"},
    ),
    "GPUs seen in a bundle without the driver's list (a kernel log alone)": (
        {
            "gpus": {
                "state": "read",
                "count": 0,
                "seen": 8,
                "error": "not in this bundle: nvidia-smi -q -x",
            }
        },
        {"GPUs": "8 seen; the driver's list is not in this bundle: nvidia-smi -q -x"},
    ),
    "no GPU anywhere: the reason": (
        {"gpus": {"state": "read", "count": 0, "seen": 0, "error": "missing: nvidia-smi"}},
        {"GPUs": "none seen (missing: nvidia-smi)"},
    ),
    "no port and no NIC, with why": (
        {
            "ib": {
                "state": "read",
                "count": 0,
                "reason": "not in this bundle: sys/class/infiniband",
            },
            "nics": {"state": "read", "count": 0, "reason": "not in this bundle: sys/class/net"},
        },
        {
            "IB": "no port (not in this bundle: sys/class/infiniband)",
            "NICs": "none (not in this bundle: sys/class/net)",
        },
    ),
}


@pytest.mark.parametrize(("inventory", "expected"), CASES.values(), ids=CASES.keys())
def test_header(inventory: dict[str, Any], expected: dict[str, str]) -> None:
    lines = dict(header(_v(inventory)))
    for label, text in expected.items():
        assert lines[label] == text


def test_coverage_lines_say_what_was_not_read() -> None:
    cov = {
        "PCI tree": {"state": "read"},
        "kernel log": {"state": "not in this bundle", "reason": "not in this bundle: dmesg"},
        "kernel modules": {"state": "unreadable", "reason": "insufficient permissions"},
    }
    lines = header(_v({}, cov))
    assert ("read", "PCI tree") in lines
    assert ("not read", "not in this bundle: kernel log") in lines
    assert ("not read", "unreadable: kernel modules (insufficient permissions)") in lines
