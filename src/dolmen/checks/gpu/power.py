"""Power: the limit in force against the board's default (or the KB's TDP), and the draw."""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.gpu.gpus import per_gpu, target, unread
from dolmen.checks.model import Level, Outcome, check, failed, passed, warned
from dolmen.host.gpu import Gpu


@check(
    "gpu.power",
    title="The GPU's power limit is not capped below its default and its draw stays within it",
    level=Level.QUICK,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=(
        "Restore the default limit (nvidia-smi -pl <default W> -i <bus id>) unless the cap is "
        "intended; check for a power brake from the PSUs or BMC (ipmitool sel list)."
    ),
    limits={"draw_over_limit": 1.1},
    source=(
        "default limit: the board (nvidia-smi -q -d POWER), else the KB's TDP (NVIDIA "
        "datasheets); draw tolerance: dolmen's judgement (instant readings overshoot briefly)"
    ),
)
def power(ctx: Context) -> list[Outcome]:
    """Reads ``power`` (draw, enforced/requested/default limits) per GPU and the KB's TDP."""
    over = float(ctx.limit("draw_over_limit"))
    gpus_kb = ctx.kb.gpus

    def body(gpu: Gpu) -> Outcome:
        p = gpu.power
        model = gpus_kb.match(gpu.name) if gpu.name else None
        tdp = model.tdp_w if model else None
        default = p.default_limit if p.default_limit is not None else tdp
        enforced = p.enforced_limit
        ev: dict[str, Any] = {
            "draw_w": p.draw,
            "enforced_limit_w": enforced,
            "requested_limit_w": p.limit,
            "default_limit_w": p.default_limit,
            "kb_tdp_w": tdp,
            "kb_model": model.id if model else None,
        }
        if enforced is None and p.draw is None:
            return unread(gpu, ("power.enforced_limit", "power.draw"), "power readings")
        if enforced is not None and p.draw is not None and p.draw > enforced * over:
            return failed(
                gpu.subject,
                f"drawing {p.draw:.0f} W, above the {enforced:.0f} W limit in force",
                remedy="Check the board and its power cables; service it if this persists.",
                **ev,
            )
        if enforced is not None and default is not None and enforced < default - 0.5:
            by = (
                "the administrator"
                if p.limit is not None and p.limit < default - 0.5
                else "the driver or a power brake"
            )
            return warned(
                gpu.subject,
                f"power capped at {enforced:.0f} W of {default:.0f} W (set by {by})",
                remedy=(
                    f"nvidia-smi -pl {default:.0f} -i {target(gpu)} if the cap is not intended; "
                    "check the PSUs and BMC power policy otherwise."
                ),
                **ev,
            )
        if enforced is None:
            return unread(gpu, "power.enforced_limit", "power limit")
        draw = f"drawing {p.draw:.0f} W of " if p.draw is not None else "limit "
        return passed(gpu.subject, f"{draw}{enforced:.0f} W", **ev)

    return per_gpu(ctx, body)
