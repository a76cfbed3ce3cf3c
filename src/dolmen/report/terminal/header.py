"""The report's first lines: what was looked at, before what is wrong with it.

From the verdict alone (its ``inventory`` and ``coverage``): the host, the GPUs (count,
model, driver, CUDA), the InfiniBand ports and NICs (count, rate, states), and which
sources were read and which were not. Absence is worded as absence: a subsystem this run
did not load is "not read", a bundle without it "not in this bundle", never "none".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dolmen.checks.verdict import READ, Verdict
from dolmen.host import NOT_IN_BUNDLE

LABEL_W = 10


def header(v: Verdict) -> list[tuple[str, str]]:
    """(label, text) lines; the label column is the same width everywhere."""
    inv = v.inventory
    host = inv.get("host", {})
    about = [v.source.get("kind", "")] if v.source.get("kind") else []
    if host.get("state") == READ:
        about += [x for x in (host.get("os"), _kernel(host.get("kernel"))) if x]
    lines = [("host", v.host + (f" ({', '.join(about)})" if about else ""))]
    if inv:
        lines += [
            ("GPUs", _gpus(inv.get("gpus", {}))),
            ("IB", _ib(inv.get("ib", {}))),
            ("NICs", _nics(inv.get("nics", {}))),
        ]
    lines += _coverage(v.coverage)
    return lines


def _kernel(release: str | None) -> str | None:
    return f"kernel {release}" if release else None


def _state(part: Mapping[str, Any]) -> str | None:
    """The words for a part that was not read, or None when it was."""
    state = part.get("state")
    if state is None:
        return "not read"
    if state != READ:
        return f"{state}: {part.get('reason')}" if part.get("reason") else str(state)
    return None


def _gpus(g: Mapping[str, Any]) -> str:
    missing = _state(g)
    if missing:
        return missing
    count, seen = g.get("count", 0), g.get("seen", 0)
    if not count:
        error = g.get("error") or ""
        if seen and error.startswith(NOT_IN_BUNDLE):  # no list to be absent from
            return f"{seen} seen; the driver's list is {error}"
        if seen:  # the reason is the "not read" line's (the coverage)
            return f"{seen} seen, none listed by the driver"
        return f"none seen ({g.get('error') or 'no reason given'})"
    models = ", ".join(f"{n} x {m}" for m, n in g.get("models", {}).items())
    text = f"{models}, driver {g.get('driver') or 'not read'}, CUDA {g.get('cuda') or 'not read'}"
    lost = [d for d in g.get("devices", ()) if d.get("lost")]
    if lost:
        text += f"; {len(lost)} lost"
    if seen > count:
        text += f"; {seen} seen by some source, {count} listed by the driver"
    return text


def _ib(ib: Mapping[str, Any]) -> str:
    missing = _state(ib)
    if missing:
        return missing
    if not ib.get("count"):
        return f"no port ({ib['reason']})" if ib.get("reason") else "no port"
    rates = ", ".join(
        f"{n} x {r} Gb/s" if r != "unread" else f"{n} rate unread"
        for r, n in ib.get("rates", {}).items()
    )
    states = ", ".join(f"{n} {s}" for s, n in ib.get("states", {}).items())
    text = f"{ib['count']} ports on {ib.get('devices', 0)} devices: {rates}; {states}"
    if ib.get("lost_devices"):
        text += f"; lost: {', '.join(ib['lost_devices'])}"
    return text


def _nics(n: Mapping[str, Any]) -> str:
    missing = _state(n)
    if missing:
        return missing
    if not n.get("count"):
        return f"none ({n['reason']})" if n.get("reason") else "none"
    states = ", ".join(f"{c} {s}" for s, c in n.get("states", {}).items())
    speeds = ", ".join(
        f"{c} x {_speed(int(s))}" for s, c in n.get("speeds_mbps", {}).items() if s.isdigit()
    )
    return f"{n['count']}: {states}" + (f"; {speeds}" if speeds else "")


def _speed(mbps: int) -> str:
    return f"{mbps / 1000:g} Gb/s" if mbps >= 1000 else f"{mbps} Mb/s"


def _coverage(cov: Mapping[str, Mapping[str, str]]) -> list[tuple[str, str]]:
    """``read`` and ``not read`` lines from the verdict's coverage (checks/verdict.py)."""
    read = [k for k, c in cov.items() if c.get("state") == READ]
    absent = [k for k, c in cov.items() if c.get("state") == NOT_IN_BUNDLE]
    broken = [
        f"{k} ({c.get('reason')})"
        for k, c in cov.items()
        if c.get("state")
        not in (
            READ,
            NOT_IN_BUNDLE,
        )
    ]
    out = [("read", ", ".join(read) or "nothing")]
    if absent:
        out.append(("not read", f"{NOT_IN_BUNDLE}: {', '.join(absent)}"))
    if broken:
        out.append(("not read", f"unreadable: {'; '.join(broken)}"))
    return out
