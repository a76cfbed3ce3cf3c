"""Durations as people write them: one parser with explicit units, one type (``timedelta``).

Every call site takes unit parts, summed: ``90s``, ``30m``, ``2h``, ``7d``,
``2w``, ``1h30m``, ``1d 12h`` (case, and spaces between a number and its unit,
ignored: ``2H``, ``90 m``). What else a text may be is the call site's choice,
named in the call, because the same ``90`` means different things to
different tools:

- ``bare="m"``: a number alone is minutes (Slurm's ``--time``); with no
  ``bare`` a number alone is refused, since it could be seconds or minutes.
- ``clock=True``: Slurm's clock forms (sbatch(1) ``--time``): ``M:S``,
  ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``.

Refused with a message that names the forms: anything else (``1.5h``,
``1e9``, ``nan``, digits of other scripts), negative durations, and durations
above ``MAX``.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Literal

from dolmen.errors import UsageError

Unit = Literal["s", "m", "h", "d", "w"]
UNITS: dict[str, int] = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_NAMES = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}

# A century: longer than any job or log window; it keeps ``now - duration`` inside
# datetime's range (year 1, which "99999999d" overflowed) and a time limit inside Slurm's
# 32-bit count of minutes (about 8,000 years).
MAX = timedelta(days=36500)
_MAX_DIGITS = 12  # more digits than this is above MAX in any unit; int() is never asked

_PARTS = re.compile(r"(?:[0-9]+ *[smhdw] *)+", re.I)
_PART = re.compile(r"([0-9]+) *([smhdw])", re.I)
_BARE = re.compile(r"[0-9]+")
# Slurm's --time forms (sbatch(1)): D-H[:M[:S]], or H:M:S and M:S.
_CLOCK = re.compile(r"(?:([0-9]+)-)?[0-9]+(?::[0-9]+){0,2}")


class NotADuration(UsageError):
    """The text has none of the duration forms the call site takes."""


class DurationOutOfRange(UsageError):
    """A duration in a valid form, but negative, zero where that is refused, or above MAX."""


def parse_duration(
    text: str,
    *,
    what: str = "duration",
    bare: Unit | None = None,
    clock: bool = False,
    positive: bool = False,
) -> timedelta:
    """The duration in ``text``; ``what`` names it in messages (``--since``, ``time limit``).

    ``bare`` is the unit of a number alone (None: refused), ``clock`` takes Slurm's
    ``D-H:M:S`` forms, ``positive`` refuses zero. NotADuration or DurationOutOfRange
    (both UsageError) otherwise, naming the forms this call site takes.
    """
    t = text.strip()
    if t.startswith("-") and _seconds(t[1:].strip(), bare, clock) is not None:
        raise DurationOutOfRange(f"{what} {text!r} is negative; a duration is 0 or more")
    seconds = _seconds(t, bare, clock)
    if seconds is None:
        raise NotADuration(
            f"{what} {text!r} is not a duration; write it as {_forms(bare, clock)}",
            hint=_hint(bare),
        )
    if seconds > MAX.total_seconds():
        raise DurationOutOfRange(
            f"{what} {text!r} is longer than {MAX.days} days; no job or log spans that"
        )
    if positive and seconds == 0:
        raise DurationOutOfRange(f"{what} {text!r} must be longer than zero")
    return timedelta(seconds=seconds)


def parse_time_limit(text: str) -> int:
    """A job's time limit in whole seconds: Slurm's conventions (a number alone is minutes,
    ``D-H:M:S`` forms), and longer than zero."""
    limit = parse_duration(text, what="time limit", bare="m", clock=True, positive=True)
    return int(limit.total_seconds())


def slurm_time(seconds: int) -> str:
    """``seconds`` as Slurm's ``D-HH:MM:SS`` (what ``sbatch --time`` takes), rounded up to 1 s."""
    days, rest = divmod(max(1, seconds), 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"{days}-{h:02d}:{m:02d}:{s:02d}"


def human(seconds: float) -> str:
    """A short reading of a duration: ``1h30m``, ``45s``."""
    s = round(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        n, s = divmod(s, size)
        if n:
            parts.append(f"{n}{unit}")
    if s or not parts:
        parts.append(f"{s}s")
    return "".join(parts)


def _seconds(t: str, bare: Unit | None, clock: bool) -> int | None:
    """The seconds of a stripped text in one of the forms asked for, else None."""
    if _PARTS.fullmatch(t):
        parts = _PART.findall(t)
        return _total([(n, UNITS[u.lower()]) for n, u in parts])
    if bare is not None and _BARE.fullmatch(t):
        return _total([(t, UNITS[bare])])
    m = _CLOCK.fullmatch(t) if clock else None
    if m is None:
        return None
    days = m.group(1)
    fields = (t.partition("-")[2] if days is not None else t).split(":")
    if days is not None:  # D-H, D-H:M, D-H:M:S
        return _total([(days, 86400), *zip(fields, (3600, 60, 1), strict=False)])
    if len(fields) == 3:  # H:M:S
        return _total(list(zip(fields, (3600, 60, 1), strict=True)))
    if len(fields) == 2:  # M:S
        return _total(list(zip(fields, (60, 1), strict=True)))
    return None  # a number alone: the call site's ``bare`` decides, above


def _total(parts: list[tuple[str, int]]) -> int:
    if any(len(n.lstrip("0")) > _MAX_DIGITS for n, _ in parts):
        return int(MAX.total_seconds()) + 1  # above MAX, without converting the digits
    return sum(int(n) * size for n, size in parts)


def _forms(bare: Unit | None, clock: bool) -> str:
    forms = "30m, 2h, 1h30m, 90s, 7d, 2w"
    if clock:
        forms += ", 1:30:00 (H:M:S), 2-00:00:00 (D-H:M:S)"
    if bare is not None:
        forms += f", or a number of {_NAMES[bare]}"
    return forms


def _hint(bare: Unit | None) -> str:
    if bare is None:
        return "give the unit (s, m, h, d, w): a number alone could be seconds or minutes"
    return f"a number alone is {_NAMES[bare]} here"
