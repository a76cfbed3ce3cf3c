"""The endpoints file of ``net prove``: which nodes to probe and how to run a command there.

    [[endpoint]]
    name = "node1"               # as the report names it
    address = "10.0.0.11"        # where probes to it go (an address the policy matches)
    netns = "ns1"                # its agents run through `ip netns exec ns1`, or
    enter = ["ssh", "node1"]     # through this argv prefix (ssh, srun -w node1 ...)

An endpoint with neither ``netns`` nor ``enter`` runs on this machine. Refused at load,
naming file:line: unknown keys, a missing name or address, an address that does not
parse, a name twice, both ``netns`` and ``enter``, fewer than two endpoints (a matrix
needs a source and a target).
"""

from __future__ import annotations

import re
from pathlib import Path

from dolmen.config import check_keys, line_of, parse_toml, read_text
from dolmen.errors import ConfigError
from dolmen.net.prove import Endpoint

_KEYS = {"name": str, "address": str, "netns": str, "enter": list}
# shell-safe: ssh joins the argv into one shell line on the far side
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


def load_endpoints(path: str | Path) -> list[Endpoint]:
    """The endpoints in ``path`` (module docstring); ConfigError otherwise."""
    p = Path(path)
    return parse_endpoints(read_text(p, "endpoints file"), str(p))


def parse_endpoints(text: str, path: str = "<endpoints>") -> list[Endpoint]:
    """Endpoints from TOML text (``path`` names it in errors)."""
    data = parse_toml(text, path)
    check_keys(data, {"endpoint": list}, text=text, path=path)
    out: list[Endpoint] = []
    for table in data.get("endpoint", []):
        if not isinstance(table, dict):
            raise ConfigError("each [[endpoint]] must be a table", path=path)
        check_keys(table, _KEYS, text=text, path=path, section="endpoint")
        name = table.get("name", "")
        where = line_of(text, "name") if not name else _line(text, name)
        if not _NAME.match(name):
            raise ConfigError(
                f"[[endpoint]] name {name!r}: letters, digits, '_', '.', '-' (required)",
                path=path,
                line=where,
            )
        if any(e.name == name for e in out):
            raise ConfigError(f"endpoint {name!r} is named twice", path=path, line=where)
        if "netns" in table and "enter" in table:
            raise ConfigError(
                f"endpoint {name!r}: give netns or enter, not both", path=path, line=where
            )
        enter: tuple[str, ...] = ()
        if "netns" in table:
            if not _NAME.match(table["netns"]):
                raise ConfigError(
                    f"endpoint {name!r}: netns {table['netns']!r} is not a namespace name",
                    path=path,
                    line=where,
                )
            enter = ("ip", "netns", "exec", table["netns"])
        elif "enter" in table:
            raw = table["enter"]
            if not raw or not all(isinstance(a, str) and a for a in raw):
                raise ConfigError(
                    f"endpoint {name!r}: enter must be a non-empty list of words",
                    path=path,
                    line=where,
                )
            enter = tuple(raw)
        try:
            out.append(Endpoint.parse(name, table.get("address", ""), enter))
        except ValueError:
            raise ConfigError(
                f"endpoint {name!r}: address {table.get('address', '')!r} is not an IP address",
                path=path,
                line=where,
                hint='write address = "10.0.0.11" (or an IPv6 address)',
            ) from None
    if len(out) < 2:
        raise ConfigError(f"{len(out)} endpoint(s): a probe matrix needs at least two", path=path)
    return out


def _line(text: str, name: str) -> int | None:
    m = re.search(rf'^[ \t]*name[ \t]*=[ \t]*"{re.escape(name)}"', text, re.M)
    return text.count("\n", 0, m.start()) + 1 if m else None
