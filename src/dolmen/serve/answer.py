"""What the agent answers a ``dolmen validate --level quick`` client (serve/client.py):
the output a cold run would print for the same options, rendered from the agent's latest
verdict, and its exit code.

The output part mirrors ``cli/validate_run.py`` (which sits above this layer): ``--npd``
the one-line reason, ``--json`` the verdict document, else the terminal report as plain
lines (the client asks only when its stdout is not a terminal); ``--slurm`` applies the
drain contract to this node (slurm/drain.py) and says what it did on stderr, after the
output, as the cold run does. A DolmenError becomes the cold run's error line and exit
code. The verdict's age goes to stderr, so stdout stays byte for byte a cold run's.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from dolmen.checks.verdict import Verdict
from dolmen.errors import DolmenError, UsageError
from dolmen.host import Host


@dataclass(frozen=True)
class Request:
    """One client request, checked (``parse_request``)."""

    mode: str  # npd | json | text
    slurm: bool
    verbose: bool
    source: str | None
    max_age: float | None


def parse_request(doc: Any) -> Request:
    """The request a client sent, or ValueError naming what is wrong with it."""
    if not isinstance(doc, dict):
        raise ValueError("a request is a JSON object")
    mode = doc.get("mode")
    if mode not in ("npd", "json", "text"):
        raise ValueError(f"mode must be npd, json or text, not {mode!r}")
    source = doc.get("source")
    if source is not None and not isinstance(source, str):
        raise ValueError("source must be a path or null")
    max_age = None
    for key in ("timeout", "max_age"):
        value = doc.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise ValueError(f"{key} must be a duration text")
        seconds = _seconds(value, key)
        if key == "max_age":
            max_age = seconds
    return Request(mode, bool(doc.get("slurm")), bool(doc.get("verbose")), source, max_age)


def _seconds(text: str, what: str) -> float:
    from dolmen.values.duration import parse_duration

    try:
        return parse_duration(text, what=what, bare="s", positive=True).total_seconds()
    except UsageError as e:
        raise ValueError(str(e)) from None


def render(req: Request, verdict: Verdict, host: Host | None, age_s: float) -> dict[str, Any]:
    """The answer: ``rc``, ``stdout``, ``stderr`` and ``age_s``."""
    out, err = io.StringIO(), io.StringIO()
    try:
        slurm_action = _slurm(host, verdict) if req.slurm else None
        if req.mode == "npd":
            from dolmen.report.reason import one_line_reason

            out.write(one_line_reason(verdict, 80) + "\n")
        elif req.mode == "json":
            from dolmen.report.json import render_json

            out.write(render_json(verdict))
        else:
            from rich.console import Console

            from dolmen.report.terminal import Options, render_terminal

            render_terminal(verdict, Console(file=out), options=Options(req.verbose))
        if slurm_action:
            err.write(slurm_action + "\n")
        rc = int(verdict.health.exit_code)
    except DolmenError as e:
        out = io.StringIO()
        err.write(f"dolmen: error: {e.message}\n" + (f"hint: {e.hint}\n" if e.hint else ""))
        rc = int(e.exit_code)
    err.write(age_line(age_s))
    return {"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue(), "age_s": age_s}


def _slurm(host: Host | None, verdict: Verdict) -> str:
    from dolmen.host import open_host
    from dolmen.slurm.drain import drain_if_unhealthy

    return drain_if_unhealthy(host or open_host(None), verdict)


def age_line(age_s: float) -> str:
    """The stderr line that says the answer is the agent's, and how old its verdict is."""
    return f"dolmen: answered by the local agent (dolmen serve): verdict {age_s:.0f} s old\n"
