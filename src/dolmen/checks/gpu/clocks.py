"""Why the GPU holds its clocks down (clock event reasons, "throttle reasons" before R535).

NVML's reasons (nvmlClocksEventReasons): idle, applications clocks, SW power cap and
sync boost are how a healthy GPU runs; SW thermal slowdown means the driver is
cooling it; HW slowdown (0x8), HW thermal slowdown (0x40) and HW power brake (0x80)
mean a hardware signal cut the clocks by half or more (NVML: HW slowdown "reducing
the core clocks by a factor of 2 or more"; it may also show briefly during a P-state
change). From 580 the driver also counts the time spent in each reason.
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.gpu.gpus import per_gpu, unread
from dolmen.checks.model import Level, Outcome, check, failed, passed, warned
from dolmen.host.gpu import Gpu

# Reason names as the facts give them (the suffix of clocks_event_reason_*).
HW_FAIL = ("hw_thermal_slowdown", "hw_power_brake_slowdown")
HW_WARN = ("hw_slowdown",)  # alone: may be a P-state change in flight (NVML)
SW_WARN = ("sw_thermal_slowdown",)
BENIGN = (
    "gpu_idle",
    "applications_clocks_setting",
    "sw_power_cap",
    "sync_boost",
    "display_clocks_setting",
)
HW_COUNTERS = ("hw_thermal_slowdown", "hw_power_brake_slowdown")


@check(
    "gpu.clock_events",
    title="No hardware slowdown holds the GPU clocks down",
    level=Level.QUICK,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=(
        "HW thermal slowdown: check the fans, airflow and inlet temperature (ipmitool sdr); "
        "HW power brake: check the PSUs and the rack's power (ipmitool sel list); then "
        "nvidia-smi -q -d PERFORMANCE to confirm the reason cleared."
    ),
    limits={"hw_counter_warn_s": 1.0},
    source=(
        "NVML nvmlClocksEventReasons; aznhc azure_gpu_clock_throttling.nhc flags everything but "
        "idle (0x1), SW power cap (0x4) and none; counter limit: dolmen's judgement"
    ),
)
def clock_events(ctx: Context) -> list[Outcome]:
    """Reads ``clock_events.active`` and, from 580, ``clock_events.counters_us`` per GPU."""
    counter_limit_us = float(ctx.limit("hw_counter_warn_s")) * 1e6

    def body(gpu: Gpu) -> Outcome:
        active = gpu.clock_events.active
        if active is None:
            return unread(gpu, "clock_events.active", "clock event reasons")
        counters = dict(gpu.clock_events.counters_us)
        ev: dict[str, Any] = {"active": list(active), "counters_us": counters}
        hw = [r for r in active if r in HW_FAIL]
        if hw:
            return failed(gpu.subject, f"hardware slowdown active: {', '.join(hw)}", **ev)
        if any(r in HW_WARN for r in active):
            return warned(
                gpu.subject,
                "HW slowdown active (clocks cut by half or more; may be a P-state change in "
                "flight: read again)",
                **ev,
            )
        if any(r in SW_WARN for r in active):
            return warned(
                gpu.subject,
                "SW thermal slowdown active: the driver lowers clocks to cool the GPU",
                remedy="Check the fans, airflow and inlet temperature; see gpu.temperature.",
                **ev,
            )
        spent = {k: counters[k] for k in HW_COUNTERS if counters.get(k, 0) > counter_limit_us}
        if spent:
            text = ", ".join(f"{k} {v / 1e6:.1f} s" for k, v in spent.items())
            return warned(
                gpu.subject,
                f"time spent in hardware slowdown since the driver loaded: {text}",
                **ev,
            )
        unknown_reasons = [r for r in active if r not in BENIGN]
        if unknown_reasons:
            return warned(gpu.subject, f"unfamiliar clock event reasons: {unknown_reasons}", **ev)
        if "clock_events.counters_us" in gpu.unread:
            return unread(gpu, "clock_events.counters_us", "clock event counters")
        why = ", ".join(active) if active else "none"
        return passed(gpu.subject, f"no slowdown (reasons: {why})", **ev)

    return per_gpu(ctx, body)
