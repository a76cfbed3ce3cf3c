"""Durations: one parser; a bare number means what its call site says, and nothing else."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dolmen.errors import UsageError
from dolmen.values.duration import (
    MAX,
    DurationOutOfRange,
    NotADuration,
    human,
    parse_duration,
    parse_time_limit,
    slurm_time,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("30m", 1800),
        ("2h", 7200),
        ("1h30m", 5400),
        ("30m1h", 5400),  # any order: logs --since took it, so it stays
        ("1h 30m", 5400),
        ("1d", 86400),
        ("7d", 604800),
        ("2W", 1209600),
        (" 2H ", 7200),
        ("90 m", 5400),  # audit --since took a space before the unit
        ("0m", 0),  # "from now": --since takes it
        ("1d12h30m15s", 131415),
    ],
)
def test_unit_parts_everywhere(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)
    assert parse_duration(text, bare="m", clock=True) == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30m", 1800),
        ("2h", 7200),
        ("1h30m", 5400),
        ("90s", 90),
        ("1d", 86400),
        ("1:30:00", 5400),  # H:M:S
        ("45", 2700),  # a bare number is minutes, as in Slurm
        ("90", 5400),
        ("5:30", 330),  # M:S
        ("2-00:00:00", 172800),  # D-H:M:S
        ("1-12", 129600),  # D-H
        ("1-0:30", 88200),  # D-H:M
        (" 2H ", 7200),
    ],
)
def test_time_limits_follow_slurm(text: str, seconds: int) -> None:
    assert parse_time_limit(text) == seconds


@pytest.mark.parametrize("text", ["90", "1:30:00", "2-00:00:00", "5:30"])
def test_without_a_unit_a_number_is_refused_where_the_call_site_says_so(text: str) -> None:
    with pytest.raises(NotADuration) as err:
        parse_duration(text, what="--since")
    assert err.value.message.startswith(f"--since {text!r} is not a duration; write it as 30m")
    assert err.value.hint is not None and "seconds or minutes" in err.value.hint


def test_the_unit_of_a_bare_number_is_a_parameter() -> None:
    assert parse_duration("90", bare="s") == timedelta(seconds=90)
    assert parse_duration("90", bare="m") == timedelta(minutes=90)
    assert parse_duration("2", bare="d") == timedelta(days=2)
    assert parse_duration("1:30", bare="m", clock=True) == timedelta(seconds=90)
    with pytest.raises(NotADuration) as err:  # clock forms only where the call site asks
        parse_duration("1:30", bare="m")
    assert "H:M:S" not in err.value.message and "number of minutes" in err.value.message


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "abc",
        "h",
        "1.5h",
        "1e9",
        "nan",
        "inf",
        "1:2:3:4",
        "1-2-3",
        "1--2",
        "-",
        "1,,2",
        "1_000",
        "\u0661m",  # ARABIC-INDIC DIGIT ONE: int() reads it, nobody types it
        "\x00",
        "2 h 3",
        "1h30",
        "5 minutes",
        "1:",
        ":30",
        "1-",
    ],
)
def test_malformed_durations_name_the_forms(text: str) -> None:
    with pytest.raises(NotADuration, match=r"is not a duration; write it as 30m, 2h"):
        parse_time_limit(text)
    with pytest.raises(NotADuration, match=r"is not a duration; write it as 30m, 2h"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("-5m", "is negative"),
        ("-1", "is negative"),
        ("- 2h", "is negative"),
        ("-1:00:00", "is negative"),
        ("0", "longer than zero"),
        ("0m", "longer than zero"),
        ("0:00", "longer than zero"),
        ("0-0", "longer than zero"),
        ("99999999999999999999", "longer than 36500 days"),
        ("99999999999999999999m", "longer than 36500 days"),
        ("9" * 5000 + "s", "longer than 36500 days"),  # past int()'s own digit limit
        ("36501d", "longer than 36500 days"),
        ("5215w", "longer than 36500 days"),
        ("100000-00:00:00", "longer than 36500 days"),
    ],
)
def test_negative_zero_and_absurd_time_limits_are_refused(text: str, why: str) -> None:
    with pytest.raises(DurationOutOfRange, match=why) as err:
        parse_time_limit(text)
    assert isinstance(err.value, UsageError) and err.value.message.startswith("time limit ")


def test_the_limit_itself_is_taken() -> None:
    assert parse_duration(f"{MAX.days}d") == MAX
    assert parse_duration("-5m".removeprefix("-")) == timedelta(minutes=5)
    with pytest.raises(DurationOutOfRange, match="negative"):
        parse_duration("-5m", what="--since")


def test_slurm_time_and_human() -> None:
    assert slurm_time(5400) == "0-01:30:00"
    assert slurm_time(172800 + 61) == "2-00:01:01"
    assert slurm_time(0) == "0-00:00:01"
    assert slurm_time(parse_time_limit("2-00:00:00")) == "2-00:00:00"
    assert human(5400) == "1h30m" and human(45) == "45s" and human(0) == "0s"
