"""What dolmen uses from Python 3.11+, with a fallback for 3.10, in one place.

Python 3.10 is Ubuntu 22.04's, so DGX OS 6's: the OS most GPU nodes run. Every module
imports these names from here instead of the standard library, and mypy checks the
code as Python 3.10 (pyproject ``python_version``), so a new 3.11-only name is caught
before a 3.10 node runs it. On 3.11+ each name is the standard library's own object.

TOML is in ``dolmen.compat.tomllib`` (imported only by what reads TOML: a plain
``validate`` on a host without a dolmen.toml never loads a TOML parser).
"""

from __future__ import annotations

import enum
import re
import sys
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

__all__ = ["UTC", "Self", "StrEnum", "Unpack", "dataclass_transform", "fromisoformat"]

UTC = timezone.utc  # datetime.UTC (3.11) is this same object

if sys.version_info >= (3, 11):
    from enum import StrEnum
    from typing import Self, Unpack, dataclass_transform

    fromisoformat = datetime.fromisoformat
else:
    if TYPE_CHECKING:  # typeshed's typing_extensions: mypy's, no runtime dependency
        from typing_extensions import Self, Unpack, dataclass_transform
    else:
        from typing import Any as Self
        from typing import Any as Unpack

        def dataclass_transform(**_kwargs: Any) -> Any:
            """PEP 681's marker only tells type checkers; at run time it changes nothing."""
            return lambda target: target

    class StrEnum(str, enum.Enum):
        """enum.StrEnum of 3.11: members are str, and str() and format() give the value
        (3.10's ``(str, Enum)`` prints ``Status.PASS``, which a report would show)."""

        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return format(str(self.value), spec)

        @staticmethod
        def _generate_next_value_(name: str, start: int, count: int, last_values: list[Any]) -> str:
            return name.lower()  # auto() as 3.11's StrEnum: the member's name, lower case

    def fromisoformat(text: str) -> datetime:
        """datetime.fromisoformat as 3.11 reads ISO 8601: ``Z``, ``+0000`` and ``+01``
        offsets, a comma or any number of fraction digits, the basic form
        (``20260301T120000``). 3.10 takes only what ``isoformat()`` writes, and journald,
        dmesg and JSON documents from other tools write the rest."""
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            return datetime.fromisoformat(_extended(text))


if sys.version_info < (3, 11):  # only 3.10's fromisoformat needs it: 0.2 ms a start to compile
    _BASIC = re.compile(
        r"(?P<y>\d{4})-?(?P<mo>\d{2})-?(?P<d>\d{2})"
        r"(?:(?P<sep>.)(?P<h>\d{2})(?::?(?P<mi>\d{2})(?::?(?P<s>\d{2})(?:[.,](?P<f>\d+))?)?)?"
        r"(?P<tz>Z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)?)?$"
    )


def _extended(text: str) -> str:
    """An ISO 8601 text in the one form 3.10's fromisoformat reads; the text unchanged
    (so that it raises the same ValueError) when it is not ISO 8601 at all."""
    m = _BASIC.match(text)
    if m is None:
        return text
    out = f"{m['y']}-{m['mo']}-{m['d']}"
    if m["h"] is None:
        return out
    out += f"{m['sep']}{m['h']}:{m['mi'] or '00'}:{m['s'] or '00'}"
    if m["f"]:
        out += "." + m["f"][:6].ljust(6, "0")  # 3.11 truncates past microseconds
    tz = m["tz"]
    if tz:
        if tz == "Z":
            out += "+00:00"
        else:
            digits = tz[1:].replace(":", "")
            parts = [digits[i : i + 2] for i in range(0, len(digits), 2)]
            out += tz[0] + ":".join(parts + ["00"] * (2 - len(parts)))
    return out
