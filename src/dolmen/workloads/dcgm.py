"""DCGM's own diagnostic, run live: ``dcgmi diag -r N -j`` through ``Host.run``.

The level is the site's ``[workloads] dcgm_level``, 1 by default: DCGM's level 3 (``-r 3``:
diagnostic GEMM, memory bandwidth, targeted stress and power, PCIe, NVLink) takes "about 15
minutes" in DCGM's diagnostics guide, past the 3 minutes the whole full tier has on one GPU,
and dolmen's own workloads already measure GEMM, memory, PCIe, peers and NCCL; a site that
wants DCGM's long run sets ``dcgm_level = 3`` (its budget then defaults to 25 min,
``BUDGET_S``). Smoke runs (tests) ask for level 1. The budget is the command's timeout.
dcgmi exits non-zero when a test fails and still prints its JSON, so the output is parsed
whatever the exit code, by the same parser that reads a recorded run from a bundle
(``dolmen.facts.dcgm``); the check judges it as ``gpu.dcgm_diag`` does, DCGM's severities
unchanged.
"""

from __future__ import annotations

from typing import Any

from dolmen.facts.dcgm import DcgmFacts, parse_dcgm_diag
from dolmen.frozen import frozen
from dolmen.host import Host, RunStatus
from dolmen.workloads.applicable import NotApplicable
from dolmen.workloads.model import Aborted, Request, Unavailable

DEFAULT_LEVEL = 1
SMOKE_LEVEL = 1
# DCGM's diagnostics guide: how long each run level takes (r1 seconds, r2 about 2 min,
# r3 about 15 min, r4 one to two hours), for the line that says a budget is too short.
LEVEL_MINUTES = {1: 1, 2: 2, 3: 15, 4: 120}
# The default budget of each level (``[workloads] dcgm_s`` overrides it): the guide's
# duration and a margin, so a healthy run is never cut off.
BUDGET_S = {1: 90.0, 2: 300.0, 3: 1500.0, 4: 9000.0}
SMOKE_TIMEOUT_S = 30.0  # a smoke budget (50 ms) is shorter than any process start


def argv(level: int) -> tuple[str, ...]:
    """The command of one run: ``dcgmi diag -r <level> -j``."""
    if level not in LEVEL_MINUTES:
        raise ValueError(f"unknown DCGM run level {level}; valid levels: 1, 2, 3, 4")
    return ("dcgmi", "diag", "-r", str(level), "-j")


@frozen
class DcgmResult:
    """One live run: its level, the parsed diagnostic, dcgmi's exit code."""

    level: int
    facts: DcgmFacts
    rc: int | None = None

    def to_json(self) -> dict[str, Any]:
        """docs/validate-full.md's ``dcgm`` shape (plus DCGM's version and runtime error)."""
        return {
            "level": self.level,
            "version": self.facts.version,
            "runtime_error": self.facts.runtime_error,
            "tests": [
                {
                    "name": r.test,
                    "gpu": r.gpu,
                    "status": r.status,
                    "info": "; ".join((*r.messages, *r.info)),
                }
                for r in self.facts.results
            ],
        }


def run(request: Request, host: Host | None = None, level: int | None = None) -> DcgmResult:
    """Run the diagnostic at ``level`` (default: the request's ``dcgm_level``) on the live
    host."""
    if host is None:
        from dolmen.host.live import LiveHost

        host = LiveHost()
    if request.device != "cuda":
        raise NotApplicable("DCGM's diagnostic loads the GPUs: not run with --device cpu")
    level = level or (SMOKE_LEVEL if request.smoke else request.dcgm_level)
    cmd = argv(level)
    timeout = max(request.budget_s, SMOKE_TIMEOUT_S) if request.smoke else request.budget_s
    request.progress("dcgm", 0.0, timeout)
    try:
        res = host.run(cmd, timeout=timeout)
    except KeyboardInterrupt:
        raise Aborted("dcgm") from None
    request.progress("dcgm", 1.0, 0.0)
    if res.status is RunStatus.MISSING:
        raise NotApplicable("dcgmi not installed: install NVIDIA DCGM (datacenter-gpu-manager)")
    if res.status is RunStatus.TIMEOUT:
        raise Unavailable(
            f"dcgmi diag -r {level} did not finish within its budget of {timeout:g} s "
            f"(DCGM's guide: about {LEVEL_MINUTES[level]} min): raise [workloads] dcgm_s"
        )
    if res.status not in (RunStatus.OK, RunStatus.FAILED) or not res.stdout.strip():
        # dcgmi ran but said nothing usable (nv-hostengine down, no permission): the
        # check says unknown with this reason, as for a malformed document.
        return DcgmResult(level, DcgmFacts(unread={"diag": res.failure()}), res.rc)
    return DcgmResult(level, parse_dcgm_diag(res.stdout), res.rc)
