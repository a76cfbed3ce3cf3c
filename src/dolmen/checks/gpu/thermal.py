"""Temperature margin to the GPU's own slowdown threshold.

Two reporting styles (``Temperature`` in dolmen.host.gpu): absolute thresholds
(Kepler..Ampere: "GPU Slowdown Temp 89 C") and, from Ada/Hopper on 535+, margins to
T.Limit ("GPU T.Limit Temp 58 C" = 58 degrees below T.Limit; "GPU Slowdown T.Limit
Temp -2 C" = the GPU slows at 2 degrees past T.Limit). Either way the margin to
slowdown is what is left before the GPU slows down by itself.
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.gpu.gpus import per_gpu, unread
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, warned
from dolmen.host.gpu import Gpu


@check(
    "gpu.temperature",
    title="Every GPU has a margin to its slowdown temperature",
    level=Level.QUICK,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=(
        "Check the fans, airflow, blanking panels and inlet temperature (ipmitool sdr type "
        "Temperature); compare with the node's peers."
    ),
    limits={"margin_warn_c": 10, "margin_fail_c": 0, "max_c": 0},
    source=(
        "the GPU's own slowdown threshold (nvidia-smi -q -d TEMPERATURE); warn margin: dolmen's "
        "judgement; max_c (0 = off): a site's absolute limit, as GCM's gpu_temperature (e.g. 85)"
    ),
)
def temperature(ctx: Context) -> list[Outcome]:
    """Reads ``temperature`` (GPU and memory temperature, absolute or T.Limit thresholds)."""
    warn_c, fail_c = int(ctx.limit("margin_warn_c")), int(ctx.limit("margin_fail_c"))
    max_c = int(ctx.limit("max_c"))

    def body(gpu: Gpu) -> Outcome:
        t = gpu.temperature
        ev: dict[str, Any] = {"gpu_c": t.gpu, "memory_c": t.memory}
        margins: dict[str, int] = {}
        if t.tlimit is not None and t.tlimit_slowdown is not None:
            margins["gpu"] = t.tlimit - t.tlimit_slowdown
            ev |= {"tlimit_c": t.tlimit, "tlimit_slowdown_c": t.tlimit_slowdown}
        elif t.gpu is not None and t.slowdown is not None:
            margins["gpu"] = t.slowdown - t.gpu
            ev |= {"slowdown_c": t.slowdown, "shutdown_c": t.shutdown}
        if t.memory is not None and t.memory_max is not None:
            margins["memory"] = t.memory_max - t.memory
            ev["memory_max_c"] = t.memory_max
        ev["margins_c"] = margins
        ev["limits"] = {"margin_warn_c": warn_c, "margin_fail_c": fail_c, "max_c": max_c}
        if t.gpu is None and "gpu" not in margins:
            return unread(gpu, ("temperature.gpu", "temperature.tlimit"), "GPU temperature")
        if max_c and t.gpu is not None and t.gpu >= max_c:
            return failed(gpu.subject, f"{t.gpu} C, at or above the site limit {max_c} C", **ev)
        fan = gpu.unread.get("fan.speed", "")
        # nvidia-smi's ERR!: the driver failed on the fan. Worse than any margin but a fail.
        fan_warn = (
            warned(
                gpu.subject,
                f"the fan could not be read ({fan.removeprefix('unreadable: ')}): a failed fan "
                f"or fan controller; {t.gpu} C",
                fan=fan,
                **ev,
            )
            if fan.startswith("unreadable")
            else None
        )
        if not margins and fan_warn:
            return fan_warn
        if not margins:
            why = gpu.unread.get("temperature.slowdown", "")
            if why.startswith("not shown"):  # the default table: the GPU may well report one
                return skipped(gpu.subject, f"{t.gpu} C; the slowdown threshold is {why}", **ev)
            return skipped(
                gpu.subject,
                f"{t.gpu} C; the GPU reports no slowdown threshold to compare with "
                '(set [thresholds."gpu.temperature"] max_c)',
                **ev,
            )
        part, margin = min(margins.items(), key=lambda kv: kv[1])
        text = f"{margin} C below the {part} slowdown threshold"
        if margin <= fail_c:
            return failed(gpu.subject, f"{part} at or past its slowdown threshold ({text})", **ev)
        if fan_warn:
            return fan_warn
        if margin <= warn_c:
            return warned(gpu.subject, f"little thermal headroom: {text}", **ev)
        return passed(gpu.subject, f"{t.gpu} C, {text}" if t.gpu is not None else text, **ev)

    return per_gpu(ctx, body)
