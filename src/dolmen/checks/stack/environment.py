"""The CUDA environment variables: folders that exist, and no stub libcuda ahead of the driver's."""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, warned
from dolmen.frozen.regex import pattern

# The toolkit's link-time stub (lib64/stubs/libcuda.so, targets/<arch>/lib/stubs) returns
# cudaErrorStubLibrary (34, "CUDA driver is a stub library") to every program that loads it
# instead of the driver's libcuda.so.1.
_STUBS = pattern(r"/stubs/?$")
_CUDA_WORDS = ("cuda", "nvidia", "nccl", "cudnn", "tensorrt")


@check(
    "stack.env.paths",
    title="CUDA_HOME, CUDA_PATH, PATH and LD_LIBRARY_PATH name folders that exist, without stubs",
    level=Level.QUICK,
    needs=("stack",),
    remedy="Fix the shell profile or the module file that sets it (grep -rn CUDA_HOME "
    "/etc/profile.d ~/.bashrc; module show cuda): point CUDA_HOME at an installed toolkit "
    "(/usr/local/cuda), drop missing entries, and never put lib64/stubs on LD_LIBRARY_PATH.",
    source="CUDA installation guide (post-installation actions); cudaErrorStubLibrary (34)",
)
def env_paths(ctx: Context) -> list[Outcome]:
    """Reads the environment (the live session's, or the snapshot's record) and which of its
    entries exist on the host."""
    s = ctx.stack
    if not s.env:
        return [
            skipped(
                "host",
                "none of CUDA_HOME, CUDA_PATH, PATH, LD_LIBRARY_PATH is set "
                "(or the snapshot did not record the environment)",
            )
        ]
    missing = {(e.variable, e.entry): e.exists for e in s.env_missing}
    out: list[Outcome] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = s.env.get(var)
        if value is None:
            continue
        subject = f"env:{var}"
        if (var, value) in missing:
            state = "is relative" if missing[(var, value)] is None else "does not exist"
            out.append(warned(subject, f"{var}={value} {state}", value=value))
        else:
            out.append(passed(subject, f"{var}={value} exists", value=value))
    ld = [e for e in s.env.get("LD_LIBRARY_PATH", "").split(":") if e]
    stubs = [e for e in ld if _STUBS.search(e)]
    ld_bad = {e: missing[("LD_LIBRARY_PATH", e)] for e in ld if ("LD_LIBRARY_PATH", e) in missing}
    if "LD_LIBRARY_PATH" in s.env:
        ev: dict[str, Any] = {"value": s.env["LD_LIBRARY_PATH"]}
        if stubs:
            out.append(
                failed(
                    "env:LD_LIBRARY_PATH",
                    f"LD_LIBRARY_PATH holds the toolkit's stub folder ({', '.join(stubs)}): its "
                    "libcuda.so shadows the driver's, and CUDA programs fail with "
                    "'CUDA driver is a stub library'",
                    stubs=stubs,
                    **ev,
                )
            )
        elif ld_bad:
            out.append(
                warned(
                    "env:LD_LIBRARY_PATH",
                    "LD_LIBRARY_PATH entries that do not exist or are relative (searched from "
                    f"the working directory): {', '.join(ld_bad)}",
                    entries=list(ld_bad),
                    **ev,
                )
            )
        else:
            out.append(passed("env:LD_LIBRARY_PATH", f"{len(ld)} entries, all present", **ev))
    path_bad = [
        e for (var, e) in missing if var == "PATH" and any(w in e.lower() for w in _CUDA_WORDS)
    ]
    if "PATH" in s.env:
        # Other missing PATH entries (~/.local/bin before first use) are harmless noise.
        if path_bad:
            out.append(
                warned(
                    "env:PATH",
                    f"PATH names CUDA folders that do not exist: {', '.join(path_bad)}",
                    entries=path_bad,
                )
            )
        else:
            out.append(passed("env:PATH", "no missing CUDA folder on PATH"))
    return out or [skipped("host", "no CUDA variable set")]
