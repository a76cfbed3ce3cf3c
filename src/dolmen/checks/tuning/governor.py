"""``tuning.cpu.governor``: cpufreq runs the performance governor, as GPU server profiles set."""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, warned
from dolmen.checks.tuning import REMEDY_PROFILE, not_read


@check(
    "tuning.cpu.governor",
    title="CPU frequency policies use the performance governor",
    level=Level.STANDARD,
    needs=("tuning",),
    when=("nvidia_gpu",),
    remedy=REMEDY_PROFILE + " Or: cpupower frequency-set -g performance.",
    source=(
        "NVIDIA nvidia-base TuneD profile and DGX OS nv-cpu-governor; TuneD "
        "throughput-performance; mlnx_tune HIGH_THROUGHPUT (tuning-sources.md)"
    ),
    gating=False,
)
def governor(ctx: Context) -> list[Outcome]:
    """Reads ``cpu_governors`` (governor -> number of cpufreq policies)."""
    t = ctx.tuning
    if t.cpu_governors is None:
        return [not_read(t.unread, "cpu_governors", "CPU governor")]
    total = sum(t.cpu_governors.values())
    others = {g: n for g, n in t.cpu_governors.items() if g != "performance"}
    if not others:
        return [passed("host", f"all {total} cpufreq policies use performance")]
    listed = ", ".join(f"{n} {g}" for g, n in others.items())
    return [
        warned(
            "host",
            f"{listed} of {total} cpufreq policies: data loaders and launch latency suffer "
            "when cores clock down",
            governors=dict(t.cpu_governors),
            drivers=list(t.cpufreq_drivers or ()),
        )
    ]
