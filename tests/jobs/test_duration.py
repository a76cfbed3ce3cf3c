"""Time limits as people write them."""

from __future__ import annotations

import pytest

from dolmen.errors import UsageError
from dolmen.jobs.duration import human, parse_duration, slurm_time


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30m", 1800),
        ("2h", 7200),
        ("1h30m", 5400),
        ("90s", 90),
        ("1d", 86400),
        ("1:30:00", 5400),
        ("45", 2700),  # a bare number is minutes, as in Slurm
        ("5:30", 330),  # M:S
        ("2-00:00:00", 172800),
        ("1-12", 129600),  # D-H
        ("1-0:30", 88200),  # D-H:M
        (" 2H ", 7200),
    ],
)
def test_parse_duration(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "0m", "abc", "1.5h", "-5m", "1:2:3:4", "h", "\x00"])
def test_bad_durations_name_the_forms(text: str) -> None:
    with pytest.raises(UsageError, match=r"30m|zero"):
        parse_duration(text)


def test_slurm_time_and_human() -> None:
    assert slurm_time(5400) == "0-01:30:00"
    assert slurm_time(172800 + 61) == "2-00:01:01"
    assert slurm_time(0) == "0-00:00:01"
    assert human(5400) == "1h30m" and human(45) == "45s" and human(0) == "0s"
