"""``tuning.limits.memlock``: RDMA and GPUDirect can lock the memory they need."""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, warned
from dolmen.checks.tuning import not_read

EFFECTIVELY_UNLIMITED = 1 << 40  # a TiB of locked memory is more than any host has to lock


@check(
    "tuning.limits.memlock",
    title="The locked-memory limit is unlimited",
    level=Level.STANDARD,
    needs=("tuning",),
    when=("nvidia_gpu",),
    remedy=(
        "Set memlock unlimited for logins (limits.d) and container runtimes (LimitMEMLOCK="
        "infinity): `dolmen tune apply ai-training` does both."
    ),
    source="DGX OS nv-docker-options LimitMEMLOCK=infinity; RDMA verbs pin registered memory",
    gating=False,
)
def memlock(ctx: Context) -> list[Outcome]:
    """Reads dolmen's own memlock limit (soft, hard) and the limits.d entries for everyone."""
    t = ctx.tuning
    if t.process_limits is None or "memlock" not in t.process_limits:
        return [not_read(t.unread, "process_limits", "memlock limit")]
    soft, hard = t.process_limits["memlock"]
    files = [f"/{e.file}: {e.domain} {e.type} {e.value}" for e in t.limits if e.item == "memlock"]
    if soft == "unlimited":
        return [passed("host", "memlock is unlimited", configured=files)]
    if soft.isdigit() and int(soft) >= EFFECTIVELY_UNLIMITED:
        return [passed("host", f"memlock is {soft} bytes: effectively unlimited", configured=files)]
    shown = soft if not soft.isdigit() else f"{int(soft) // 1024} KiB"
    return [
        warned(
            "host",
            f"memlock is {shown} (hard {hard}): NCCL over InfiniBand/RoCE and GPUDirect RDMA "
            "fail or fall back when they cannot pin buffers",
            soft=soft,
            hard=hard,
            configured=files,
        )
    ]
