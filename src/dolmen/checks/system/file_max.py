"""The system-wide open-file limit: "VFS: file-max limit N reached" in the kernel log.

When ``fs.file-max`` is reached every ``open()`` on the node fails with ENFILE, for the
jobs and for the daemons alike. GPUd's os component records the line as an event and
judges file-handle use by percentage (80 % degraded, 95 % unhealthy); dolmen warns on
the line within the window.
"""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed
from dolmen.checks.system.log_window import split_events, when, worst


@check(
    "system.file_max",
    title="The system-wide open-file limit (fs.file-max) was not reached recently",
    level=Level.QUICK,
    needs=("kernel_log", "os"),
    remedy=(
        "Find the process holding the descriptors (ls /proc/*/fd | wc -l per process, lsof) "
        "and restart it; raise fs.file-max (sysctl -w fs.file-max=...) if the load needs it."
    ),
    limits={"window_hours": 24},
    source=(
        "GPUd os component (vfs_file_max_limit_reached: an event; file handles judged at "
        "80/95 %); kb/data/xids.toml [[event]] file_max"
    ),
)
def file_max(ctx: Context) -> list[Outcome]:
    """Reads the kernel log's file_max events and the uptime (the window)."""
    split = split_events(ctx, ("file_max",))
    if isinstance(split, Outcome):
        return [split]
    if not split.recent:
        msg = f"file-max not reached in the window ({len(split.older)} older line(s))"
        return [passed("host", msg, **split.evidence())]
    last = split.recent[-1]
    summary = (
        f"the system-wide open-file limit ({last.detail}) was reached {len(split.recent)} "
        f"time(s), last {when(last)}: opens fail with ENFILE"
    )
    return [Outcome(worst(ctx, split.recent), "host", summary, None, split.evidence())]
