"""MIG (Multi-Instance GPU): no mode change waiting for a reset, and instances where MIG is on."""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.gpu.gpus import per_gpu, target, unread
from dolmen.checks.model import Level, Outcome, check, passed, warned
from dolmen.host.gpu import Gpu


@check(
    "gpu.mig",
    title="MIG mode is settled, and a GPU in MIG mode has instances to run on",
    level=Level.QUICK,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=(
        "Apply a pending mode with a GPU reset (nvidia-smi -r -i <bus id>); create instances "
        "with nvidia-smi mig -cgi <profiles> -C -i <bus id>, or turn MIG off (nvidia-smi -mig 0)."
    ),
    source="NVIDIA MIG user guide: a mode change applies at the next GPU reset",
)
def mig(ctx: Context) -> list[Outcome]:
    """Reads ``mig`` (current and pending mode, MIG devices) per GPU."""

    def body(gpu: Gpu) -> Outcome:
        m = gpu.mig
        if m.current is None:
            return unread(gpu, "mig.current", "MIG mode")
        ev = {"current": m.current, "pending": m.pending, "devices": len(m.devices)}
        who = target(gpu)
        if m.pending is not None and m.pending != m.current:
            return warned(
                gpu.subject,
                f"MIG mode turns {'on' if m.pending else 'off'} at the next GPU reset",
                remedy=f"Reset the GPU when idle (nvidia-smi -r -i {who}) to apply the MIG mode.",
                **ev,
            )
        if m.current and not m.devices:
            return warned(
                gpu.subject,
                "MIG is enabled but no GPU instance exists: CUDA jobs cannot use this GPU",
                remedy=f"nvidia-smi mig -cgi <profiles> -C -i {who} (or -mig 0 to turn it off).",
                **ev,
            )
        state = f"MIG enabled, {len(m.devices)} instances" if m.current else "MIG disabled"
        return passed(gpu.subject, state, **ev)

    return per_gpu(ctx, body)
