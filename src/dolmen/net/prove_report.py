"""The report of ``net prove``: the ``dolmen.net.prove/1`` document and its terminal text.

Leaks first (what connected that the policy denies), then blocks (what the policy allows
that did not connect), then unknowns (what could not be told, and why); the counts last,
as one line a person or a script can grep (``0 leaks``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dolmen.errors import ExitCode
from dolmen.net.prove import Endpoint, Listener, Observation, counts

SCHEMA = "dolmen.net.prove/1"
_SHOWN = 20  # problems of one kind listed in the terminal; --json has them all


def exit_code(observations: Sequence[Observation]) -> ExitCode:
    """1 on any leak or block, 2 when some probe could not be told (and none failed),
    else 0: an unknown is never read as a pass."""
    tally = counts(observations)
    if tally["leak"] or tally["block"]:
        return ExitCode.UNHEALTHY
    if tally["unknown"] or not tally["probes"]:
        return ExitCode.UNDECIDED
    return ExitCode.OK


def to_json(
    observations: Sequence[Observation],
    endpoints: Sequence[Endpoint],
    listeners: Mapping[str, Listener],
    *,
    policy: str,
    ports: Sequence[int],
    sample: Sequence[int],
    seed: int,
    timeout_s: float,
    seconds: float,
) -> dict[str, object]:
    """The whole matrix, one row per probe (schema ``net.prove``)."""
    return {
        "schema": SCHEMA,
        "policy": policy,
        "ports": sorted(ports),
        "sample_ports": list(sample),
        "seed": seed,
        "timeout_s": timeout_s,
        "seconds": round(seconds, 3),
        "counts": counts(observations),
        "endpoints": [_endpoint(e, listeners.get(e.name)) for e in endpoints],
        "probes": [_row(o) for o in observations],
    }


def _endpoint(ep: Endpoint, lis: Listener | None) -> dict[str, object]:
    return {
        "name": ep.name,
        "address": str(ep.address),
        "listener": {
            "ready": bool(lis and lis.ready),
            "alive": bool(lis and lis.alive),
            "failed": dict(lis.failed) if lis else {},
            "problem": lis.problem if lis else "not a target of any probe",
        },
    }


def _row(o: Observation) -> dict[str, object]:
    p = o.probe
    return {
        "source": p.source,
        "target": p.target,
        "proto": p.proto,
        "port": p.port,
        "expect": "allow" if p.allowed else "deny",
        "why": p.why,
        "outcome": o.outcome,
        "reached": o.reached,
        "witnessed": o.witnessed,
        "verdict": o.verdict,
        "detail": o.detail,
        "ms": o.ms,
    }


def render_text(observations: Sequence[Observation], seconds: float) -> str:
    """The terminal report (module docstring)."""
    lines: list[str] = []
    titles = {
        "leak": "LEAK (connected, the policy denies it)",
        "block": "BLOCK (did not connect, the policy allows it)",
        "unknown": "UNKNOWN (could not tell)",
    }
    for verdict, title in titles.items():
        rows = [o for o in observations if o.verdict == verdict]
        if not rows:
            continue
        lines.append(f"{title}: {len(rows)}")
        for o in rows[:_SHOWN]:
            p = o.probe
            lines.append(
                f"  {p.source} -> {p.target} {p.proto}/{p.port}: {o.outcome}"
                f" ({o.detail}); policy: {'allow' if p.allowed else 'deny'}, {p.why}"
            )
        if len(rows) > _SHOWN:
            lines.append(f"  ... and {len(rows) - _SHOWN} more (--json lists them all)")
    c = counts(observations)
    lines.append(
        f"{c['probes']} probes in {seconds:.1f} s: {c['ok']} as the policy says,"
        f" {c['leak']} leaks, {c['block']} blocks, {c['unknown']} unknown"
    )
    return "\n".join(lines) + "\n"
