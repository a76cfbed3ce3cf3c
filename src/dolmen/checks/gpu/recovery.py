"""Whether the driver asks for a GPU reset, a drain or a reboot.

Drivers up to 570 report ``gpu_reset_status`` (reset required, drain and reset
recommended); 570 added ``gpu_recovery_action`` (NVML nvmlDeviceGpuRecoveryAction_t:
None, GPU Reset, Node Reboot, Drain P2P, Drain and Reset), and 580 dropped the
former. 580 also reports repairs that wait for a reset (channel and TPC repair).
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.gpu.actions import DRAIN, needs_recovery, recovery_remedy
from dolmen.checks.gpu.gpus import per_gpu, target, unread
from dolmen.checks.model import Level, Outcome, check, failed, passed
from dolmen.host.gpu import Gpu


@check(
    "gpu.reset_required",
    title="No GPU asks for a reset, a drain or a reboot",
    level=Level.QUICK,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=f"{DRAIN.capitalize()}, stop its processes, reset the GPU (nvidia-smi -r -i <bus id>).",
    source=(
        "nvidia-smi -q 'GPU Reset Status' (<= 570) and 'GPU Recovery Action' (570+), NVML "
        "nvmlDeviceGpuRecoveryAction_t; channel/TPC repair pending (580+)"
    ),
)
def reset_required(ctx: Context) -> list[Outcome]:
    """Reads ``reset`` (required, drain recommended, recovery action) and the 580+ repair flags."""

    def body(gpu: Gpu) -> Outcome:
        r, ecc = gpu.reset, gpu.ecc
        who = target(gpu)
        ev: dict[str, Any] = {
            "recovery_action": r.recovery_action,
            "reset_required": r.required,
            "drain_and_reset_recommended": r.drain_recommended,
            "channel_repair_pending": ecc.channel_repair_pending,
            "tpc_repair_pending": ecc.tpc_repair_pending,
        }
        if needs_recovery(r.recovery_action):
            action = r.recovery_action or ""
            return failed(
                gpu.subject,
                f"the GPU asks for recovery action '{action}'",
                remedy=recovery_remedy(action, who),
                **ev,
            )
        if r.drain_recommended:
            return failed(
                gpu.subject,
                "the driver recommends draining and resetting the GPU",
                remedy=recovery_remedy("Drain and Reset", who),
                **ev,
            )
        if r.required:
            return failed(gpu.subject, "the driver reports that the GPU requires a reset", **ev)
        pending = [
            name
            for name, flag in (
                ("channel", ecc.channel_repair_pending),
                ("TPC", ecc.tpc_repair_pending),
            )
            if flag
        ]
        if pending:
            return failed(
                gpu.subject,
                f"{' and '.join(pending)} repair pending: applied at the next GPU reset",
                remedy=recovery_remedy("GPU Reset", who),
                **ev,
            )
        if r.recovery_action is None and r.required is None:
            return unread(
                gpu,
                ("reset.recovery_action", "reset.required", "reset.drain_recommended"),
                "reset status / recovery action",
            )
        return passed(gpu.subject, "no reset or recovery action requested", **ev)

    return per_gpu(ctx, body)
