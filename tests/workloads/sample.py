"""A workload of the tests' own for the session machinery (no torch): counts its runs."""

from __future__ import annotations

from typing import Any

from dolmen.workloads.model import Request, Unavailable

CALLS: list[Request] = []


def run(request: Request) -> dict[str, Any]:
    """Records the request; says Unavailable when asked for a GPU (no torch here)."""
    CALLS.append(request)
    request.progress("sample", 0.5, None)
    if request.device == "cuda":
        raise Unavailable("no GPU in the sample workload")
    return {"budget_s": request.budget_s}


def interrupted(request: Request) -> dict[str, Any]:
    """A Ctrl-C outside any abortable block."""
    raise KeyboardInterrupt
