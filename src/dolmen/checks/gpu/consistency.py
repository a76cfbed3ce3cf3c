"""All GPUs of a node alike: one model, one VBIOS, one GPU part number (board parts noted)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.gpu.gpus import no_inventory
from dolmen.checks.model import Level, Outcome, check, passed, skipped, unknown, warned
from dolmen.host.gpu import Gpu


@check(
    "gpu.consistency",
    title="The node's GPUs are one model with one VBIOS and one GPU part number",
    level=Level.QUICK,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=(
        "Flash the same VBIOS on every GPU (the vendor's firmware update for the baseboard), or "
        "replace the odd board; mixed parts make jobs run at the slowest GPU's pace."
    ),
    source="aznhc azure_gpu_vbios.nhc and GCM vbios_mismatch: uniform VBIOS across the node",
)
def consistency(ctx: Context) -> list[Outcome]:
    """Reads each GPU's product name, VBIOS and board part number."""
    gpus = [g for g in ctx.gpu.gpus if not g.lost]
    if not ctx.gpu.gpus:
        return [no_inventory(ctx.gpu)]
    if len(gpus) < 2:
        return [skipped("host", f"{len(gpus)} readable GPU: nothing to compare")]
    names = _values(gpus, lambda g: g.name)
    if None in names or not names:
        return [unknown("host", "a GPU's product name could not be read", names=_show(names))]
    if len(names) > 1:
        return [
            warned(
                "host",
                f"mixed GPU models: {', '.join(sorted(str(n) for n in names))}",
                models=_show(names),
            )
        ]
    findings: list[str] = []
    ev: dict[str, Any] = {"model": next(iter(names))}
    for label, get in (
        ("VBIOS", lambda g: _board_vbios(gpus, g)),
        ("GPU part number", lambda g: g.gpu_part_number),
        ("board part number", lambda g: g.board_part_number),
    ):
        seen = _values(gpus, get)
        readable = {k: v for k, v in seen.items() if k is not None}
        ev[label.replace(" ", "_").lower()] = _show(seen)
        if len(readable) > 1 and label != "board part number":
            findings.append(f"{len(readable)} {label}s ({', '.join(sorted(readable))})")
        elif len(readable) > 1:
            # A module replaced in the field carries another board part number with the same
            # GPU part and VBIOS (the real 8x H100 capture qx-h100.xml: one 965-2G520-A800 among
            # seven 692-2G520-0200): evidence, not a finding.
            ev["note"] = f"{len(readable)} board part numbers (a replaced module?)"
    if findings:
        return [warned("host", f"GPUs differ: {'; '.join(findings)}", **ev)]
    vbios = _values(gpus, lambda g: g.vbios)
    if None in vbios:
        return [unknown("host", "a GPU's VBIOS version could not be read", **ev)]
    return [passed("host", f"{len(gpus)} x {ev['model']}, VBIOS {next(iter(vbios))}", **ev)]


def _board_vbios(gpus: list[Gpu], gpu: Gpu) -> str | None:
    """The VBIOS versions of the GPU's board: a dual-GPU board (Tesla K80) carries one image
    per chip, .05 and .06 on the real K80 capture (openpai nvidia_smi_out_of_order.xml), so
    boards are compared, not chips. GPUs without a serial count as boards of their own."""
    if gpu.vbios is None:
        return None
    if gpu.serial is None:
        return gpu.vbios
    same = [g.vbios for g in gpus if g.serial == gpu.serial]
    if any(v is None for v in same):
        return None
    return " + ".join(sorted(v for v in same if v is not None))


def _values(gpus: list[Gpu], get: Callable[[Gpu], str | None]) -> dict[str | None, list[str]]:
    out: dict[str | None, list[str]] = defaultdict(list)
    for g in gpus:
        out[get(g)].append(g.subject)
    return dict(out)


def _show(values: dict[str | None, list[str]]) -> dict[str, list[str]]:
    return {str(k): v for k, v in values.items()}
