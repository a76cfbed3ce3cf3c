"""Time limits as people write them (``30m``, ``2h``, ``1h30m``, ``1:30:00``, ``2-00:00:00``)."""

from __future__ import annotations

import re

from dolmen.errors import UsageError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_SUFFIXED = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
# Slurm's --time forms: "M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S" (sbatch(1)).
_SLURM = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")

FORMATS = "30m, 2h, 1h30m, 90s, 1:30:00 (H:M:S), 2-00:00:00 (D-H:M:S), or minutes"


def parse_duration(text: str) -> int:
    """Seconds in ``text``; a bare number is minutes, as in Slurm. UsageError names the forms."""
    t = text.strip().lower()
    m = _SUFFIXED.match(t)
    if t and m and any(m.groups()):
        d, h, mi, s = (int(g or 0) for g in m.groups())
        return _positive(text, d * 86400 + h * 3600 + mi * 60 + s)
    m = _SLURM.match(t)
    if m:
        days, a, b, c = m.groups()
        if days is not None:  # D-H[:M[:S]]
            total = int(days) * 86400 + int(a) * 3600 + int(b or 0) * 60 + int(c or 0)
        elif c is not None:  # H:M:S
            total = int(a) * 3600 + int(b) * 60 + int(c)
        elif b is not None:  # M:S
            total = int(a) * 60 + int(b)
        else:  # M
            total = int(a) * 60
        return _positive(text, total)
    raise UsageError(f"time limit {text!r} is not a duration; write it as {FORMATS}")


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


def _positive(text: str, total: int) -> int:
    if total <= 0:
        raise UsageError(f"time limit {text!r} must be longer than zero")
    return total
