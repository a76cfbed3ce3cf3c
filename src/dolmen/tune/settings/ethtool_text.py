"""Pure parsers of what ``[net]`` reads: ``ethtool -g``, ``-k``, ``-i`` and ``ip -o link``.

``ethtool -g eth0`` (ring sizes; ethtool 6.x adds lines such as ``RX Buf Len:`` and
``TX push:`` after ``TX:``, and prints ``n/a`` where a driver has no value)::

    Ring parameters for eth0:
    Pre-set maximums:
    RX:             8192
    RX Mini:        n/a
    TX:             8192
    Current hardware settings:
    RX:             1024
    TX:             1024

``ethtool -k eth0`` (features; ``[fixed]`` when the driver does not let it change,
``[requested on]`` when the request could not be met)::

    Features for eth0:
    large-receive-offload: off [fixed]
    tx-nocache-copy: off

Malformed input gives what could be parsed, never an exception.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rings:
    """RX and TX ring sizes: the driver's maximum and the current one (None: not shown)."""

    rx_max: int | None
    tx_max: int | None
    rx: int | None
    tx: int | None


@dataclass(frozen=True)
class Feature:
    """One offload feature: on or off, and whether the driver lets it change."""

    on: bool
    fixed: bool


def _number(text: str) -> int | None:
    word = text.strip()
    return int(word) if word.isdigit() else None


def parse_rings(text: str) -> Rings | None:
    """``ethtool -g``; None when neither section is there (an error message, junk)."""
    section = ""
    got: dict[str, int | None] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("Pre-set maximums"):
            section = "max"
        elif stripped.startswith("Current hardware settings"):
            section = "cur"
        elif section and ":" in stripped:
            name, _, value = stripped.partition(":")
            if name in ("RX", "TX"):
                got.setdefault(f"{name.lower()}_{section}", _number(value))
    if not got:
        return None
    return Rings(got.get("rx_max"), got.get("tx_max"), got.get("rx_cur"), got.get("tx_cur"))


def parse_features(text: str) -> dict[str, Feature]:
    """``ethtool -k``: feature name -> Feature (sub-features indented under a parent too)."""
    out: dict[str, Feature] = {}
    for line in text.splitlines():
        m = re.match(r"^\s*([a-z0-9][a-z0-9\-]*):\s+(on|off)\b(.*)$", line)
        if m:
            out[m.group(1)] = Feature(m.group(2) == "on", "[fixed]" in m.group(3))
    return out


def parse_driver(text: str) -> tuple[str | None, str | None]:
    """``ethtool -i``: (driver, bus-info); an empty bus-info (veth, bridges) is None."""
    fields = dict(
        (k.strip(), v.strip()) for k, _, v in (ln.partition(":") for ln in text.splitlines())
    )
    return fields.get("driver") or None, fields.get("bus-info") or None


def parse_links(text: str) -> list[str]:
    """Interface names of ``ip -o link show`` (``3: va@vb: <...>`` -> ``va``), loopback left out."""
    names = []
    for line in text.splitlines():
        m = re.match(r"^\d+:\s+([^:@\s]+)(?:@[^:\s]+)?:\s+<([^>]*)>", line)
        if m and "LOOPBACK" not in m.group(2).split(","):
            names.append(m.group(1))
    return names
