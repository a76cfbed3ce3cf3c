"""What one reading of a since-boot counter proves (pigeonhole over windows of uptime)."""

from __future__ import annotations

import pytest

from dolmen.checks.system.since_boot import allowance, describe_uptime, windows


@pytest.mark.parametrize(
    ("uptime", "window", "expected"),
    [
        (1.0, 10_800.0, 1),  # under one window: one window
        (10_800.0, 10_800.0, 1),
        (10_801.0, 10_800.0, 2),
        (38 * 86400.0, 10_800.0, 304),  # the H100 scenario: 38 days in 3-hour windows
        (0.5, 60.0, 1),
    ],
)
def test_windows(uptime: float, window: float, expected: int) -> None:
    assert windows(uptime, window) == expected


def test_allowance() -> None:
    # Azure healthagent: 3 link_downed within 3 h. 255 in 38 days proves nothing; 3 in 2 h does.
    proven = allowance(3, 10_800, 38 * 86400)
    assert proven == 912 and proven > 255
    assert allowance(3, 10_800, 7200) == 3
    assert allowance(8, 60, None) is None


@pytest.mark.parametrize(
    ("uptime", "text"),
    [(None, "unknown"), (7200.0, "2.0 h"), (3283200.45, "38.0 days")],
)
def test_describe_uptime(uptime: float | None, text: str) -> None:
    assert describe_uptime(uptime) == text
