"""``tuning.gpu.persistence``: persistence mode on, so CUDA jobs do not re-initialise GPUs."""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.gpu.gpus import no_inventory, unread
from dolmen.checks.model import Level, Outcome, check, passed, warned


@check(
    "tuning.gpu.persistence",
    title="GPU persistence mode is on",
    level=Level.STANDARD,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=(
        "Run nvidia-persistenced with --persistence-mode (systemctl enable --now "
        "nvidia-persistenced), or `dolmen tune apply` a GPU profile."
    ),
    source=(
        "DGX OS nv-persistence-mode; NVIDIA driver persistence documentation: without it each "
        "CUDA job pays seconds of initialisation (arrayfire/arrayfire#2467)"
    ),
    gating=False,
)
def persistence(ctx: Context) -> list[Outcome]:
    """Reads ``persistence_mode`` of each GPU."""
    facts = ctx.gpu
    if not facts.gpus:
        return [no_inventory(facts)]
    out = []
    for gpu in facts.gpus:
        if gpu.persistence_mode is None:
            out.append(unread(gpu, "persistence_mode", "persistence mode"))
        elif gpu.persistence_mode:
            out.append(passed(gpu.subject, "persistence mode is on"))
        else:
            out.append(
                warned(
                    gpu.subject,
                    "persistence mode is off: every CUDA start pays the driver's initialisation",
                )
            )
    return out
