"""Leaves of ``nvidia-smi -q -x``: placeholders, units, and reading one field.

A leaf is a value (``"68.92 W"``), a placeholder that says why there is none
(``N/A``, ``GPU is lost``...), empty, or absent; its parent may itself read
``N/A`` or ``GPU is lost`` instead of holding children. ``read_field`` turns
all of these into a value or a reason (docs/architecture.md reason words).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from typing import Any

from dolmen.frozen.regex import pattern
from dolmen.host.gpu.model import ABSENT, DEPRECATED, GPU_LOST, NO_PERMISSION, NOT_SUPPORTED

EMPTY = "not supported: empty in this driver's output"
Index = Mapping[str, ET.Element]  # elements under one <gpu> by relative path
Conv = Callable[[str], Any]  # raises ValueError (or KeyError) on a malformed value

# Placeholders nvidia-smi prints instead of a value (lower-cased, brackets dropped).
_SENTINELS: Mapping[str, str] = {
    "n/a": NOT_SUPPORTED,
    "not supported": NOT_SUPPORTED,
    "requested functionality has been deprecated": DEPRECATED,  # 570+ on legacy leaves
    "insufficient permissions": NO_PERMISSION,  # e.g. power_smoothing on B200 when not root
    "gpu is lost": GPU_LOST,
    "not found": "missing: nvidia-smi printed 'Not Found'",  # cuda_version on 430.x
    "unknown error": "unreadable: nvidia-smi printed 'Unknown Error'",
    "gpu requires reset": "unreadable: the GPU requires a reset",
    "err!": "unreadable: nvidia-smi printed 'ERR!'",  # the default table's read failure
}


def sentinel(text: str) -> str | None:
    """The reason a value is a placeholder (``N/A``, ``[N/A]``, ``GPU is lost``...), else None."""
    return _SENTINELS.get(text.strip().strip("[]").strip().lower())


_QTY = pattern(r"^(-?\d+(?:\.\d+)?)\s*([A-Za-z%/()]*)$")


def quantity(unit: str, kind: Callable[[str], Any]) -> Conv:
    """A converter for ``"<number> <unit>"`` (the unit may be left out); ValueError else."""

    def conv(text: str) -> Any:
        m = _QTY.match(text)
        if m is None or m.group(2).lower() not in (unit, ""):
            raise ValueError(text)
        return kind(m.group(1))

    return conv


def text(value: str) -> str:
    """A text value with its whitespace runs collapsed (values are padded in some outputs)."""
    return " ".join(value.split())


_FLAGS = {"enabled": True, "disabled": False, "yes": True, "no": False, "true": True}
_FLAGS |= {"false": False, "active": True, "not active": False, "on": True, "off": False}


def flag(value: str) -> bool:
    """Enabled/Disabled, Yes/No, True/False, Active/Not Active, On/Off; KeyError else."""
    return _FLAGS[text(value).lower()]


COUNTER_MAX = (1 << 64) - 1  # NVML counters are unsigned long long


def count(value: str) -> int:
    """A counter: ASCII digits up to ``COUNTER_MAX``; ValueError else. ``int()`` alone takes
    ``-5``, ``+5``, ``5_0`` and other scripts' digits, and a check would trust them."""
    t = value.strip()
    if not (t.isascii() and t.isdigit()) or int(t) > COUNTER_MAX:
        raise ValueError(value)
    return int(t)


def counter_of(unit: str) -> Conv:
    """``count`` with an optional unit (``"12 bank(s)"``, ``"300 us"``)."""
    qty = quantity(unit, str)
    return lambda value: count(qty(value))


integer = quantity("", int)
celsius = quantity("c", int)
mhz = quantity("mhz", int)
mib = quantity("mib", int)
percent = quantity("%", int)
watts = quantity("w", float)
microseconds = counter_of("us")
banks = counter_of("bank(s)")
width = quantity("x", int)  # "16x"


def read_leaf(idx: Index, path: str) -> tuple[str | None, str]:
    """The text at ``path``, or None and the reason it is not a value."""
    node = idx.get(path)
    if node is None:
        return None, absent(idx, path)
    value = (node.text or "").strip()
    if not value:
        return None, EMPTY
    why = sentinel(value)
    return (None, why) if why else (value, "")


def absent(idx: Index, path: str) -> str:
    """Why ``path`` is missing: its nearest present parent may read N/A or GPU is lost
    (``<remapped_rows>GPU is lost</remapped_rows>``) or be empty (GeForce boards)."""
    while "/" in path:
        path = path.rpartition("/")[0]
        node = idx.get(path)
        if node is not None:
            value = (node.text or "").strip()
            if value:
                return sentinel(value) or ABSENT
            return EMPTY if len(node) == 0 else ABSENT
    return ABSENT


def read_field(
    idx: Index,
    key: str,
    paths: tuple[str, ...],
    conv: Conv,
    values: dict[str, Any],
    unread: dict[str, str],
) -> None:
    """Store the first readable value among ``paths`` under ``key``, else the best reason:
    the reason of a present element beats "not in this driver's output"."""
    reason = ""
    for path in paths:
        raw, why = read_leaf(idx, path)
        if raw is not None:
            try:
                values[key] = conv(raw)
                return
            except (ValueError, KeyError):
                why = f"malformed: {raw[:40]!r}"
        if not reason or (reason == ABSENT and why != ABSENT):
            reason = why
    unread[key] = reason


def numbers(
    node: ET.Element | None,
    prefix: str,
    conv: Conv,
    unread: dict[str, str] | None = None,
    key: str = "",
) -> dict[str, int]:
    """Readable numeric children of ``node`` by tag without ``prefix`` (optional detail:
    placeholders are left out). A child that is neither a number nor a placeholder is
    recorded under ``key`` in ``unread``: a check must not take it for a missing zero."""
    out: dict[str, int] = {}
    for child in node if node is not None else ():
        raw = (child.text or "").strip()
        try:
            out[child.tag.removeprefix(prefix)] = conv(raw)
        except ValueError:
            if unread is not None and raw and not sentinel(raw):
                unread.setdefault(key, f"malformed: {child.tag} is {raw[:40]!r}")
    return out


def optional(conv: Conv, value: str | None) -> Any:
    """``conv(value)``, or None when it is absent or not a value."""
    try:
        return conv((value or "").strip())
    except ValueError:
        return None
