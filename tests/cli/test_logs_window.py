"""``logs scan --since``'s window, pure: counted back from the newest end of each clock
(offset-aware, local), boot seconds within one boot, and what it cannot place kept."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from dolmen.cli.logs_window import END, NOW, Span, make_window
from dolmen.compat import UTC

AWARE = Span(datetime(2024, 11, 15, 12, 0, tzinfo=UTC), None, True, True)
OLDER = Span(datetime(2024, 11, 14, 12, 0, tzinfo=UTC), None, True, True)
LOCAL = Span(datetime(2025, 1, 1, 8, 0), None, True, True)
BOOT = Span(None, 7300.0, True, False)
REBOOTED = Span(None, 7300.0, False, False)
EMPTY = Span(None, None, True, False)


@pytest.mark.parametrize(
    ("index", "time", "boot", "kept"),
    [
        (0, "2024-11-15T11:30:00+00:00", None, True),
        (0, "2024-11-15T10:59:59+00:00", None, False),
        (1, "2024-11-14T11:30:00+00:00", None, False),  # the older file shares the newest end
        (0, "2024-11-15T12:30:00+01:00", None, True),  # 11:30 UTC
        (2, "2025-01-01T07:30:00", None, True),  # local times: their own end
        (2, "2025-01-01T06:59:00", None, False),
        (3, None, 4000.0, True),
        (3, None, 3000.0, False),
        (4, None, 3000.0, True),  # seconds went back in that file: cannot be placed
        (5, None, None, True),
        (0, "not a time", None, True),
    ],
)
def test_keeps(index: int, time: str | None, boot: float | None, kept: bool) -> None:
    w = make_window("1h", timedelta(hours=1), END, [AWARE, OLDER, LOCAL, BOOT, REBOOTED, EMPTY])
    assert w.keeps(index, time, boot) is kept


def test_each_file_is_told_its_window() -> None:
    w = make_window("1h", timedelta(hours=1), END, [AWARE, OLDER, BOOT, REBOOTED, EMPTY])
    assert w.file_doc(1, OLDER)["end"] == "2024-11-15T12:00:00+00:00"
    assert w.file_doc(2, BOOT) == {
        "start": None,
        "end": None,
        "start_boot_seconds": 3700.0,
        "end_boot_seconds": 7300.0,
    }
    assert "counted back from the end of the logs, not now" in w.describe(0, AWARE)
    assert "a reboot inside the log" in w.describe(3, REBOOTED)
    assert "no time in this log to count back from" in w.describe(4, EMPTY)


def test_an_end_near_year_one_keeps_everything() -> None:
    first = Span(datetime(1, 1, 1, 0, 30, tzinfo=UTC), None, True, True)
    w = make_window("7d", timedelta(days=7), END, [first])
    assert w.keeps(0, "0001-01-01T00:00:00+00:00", None)
    assert w.file_doc(0, first)["start"] is None


def test_from_now_places_no_boot_second() -> None:
    w = make_window("1h", timedelta(hours=1), NOW, [AWARE, BOOT])
    assert not w.keeps(0, "2024-11-15T11:30:00+00:00", None)
    assert w.keeps(1, None, 1.0) and "counted back from now" in w.describe(0, AWARE)
    recent = (datetime.now(UTC) - timedelta(minutes=5)).isoformat()
    assert w.keeps(0, recent, None)
