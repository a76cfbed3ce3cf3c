"""ECC: uncorrectable errors since the driver loaded and over the board's life, corrected-error
volume, ECC mode, and the SRAM error threshold.

Counters come in two layouts (``EccCounts.raw``): Turing and newer print flat
``sram_*``/``dram_*`` counters (570+ splits SRAM uncorrectable into parity and SEC-DED);
Kepler..Volta print ``single_bit``/``double_bit`` per location, where ``device_memory``
is the DRAM and every other location is on-chip SRAM.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.gpu.actions import DRAIN
from dolmen.checks.gpu.gpus import is_datacenter, per_gpu, target, unread
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, warned
from dolmen.host.gpu import EccCounts, Gpu


def split(counts: EccCounts, kind: str) -> tuple[int | None, int | None]:
    """(SRAM, DRAM) sums of ``kind`` (``correctable``/``uncorrectable``) from the raw counters;
    None where the layout has no such location."""
    raw = counts.raw
    if any(k.startswith(("sram_", "dram_")) for k in raw):
        # "sram_uncorrectable_parity" contains "correctable": match the prefix exactly.
        def total(prefix: str) -> int | None:
            keys = [k for k in raw if k == prefix or k.startswith(prefix + "_")]
            return sum(raw[k] for k in keys) if keys else None

        return total(f"sram_{kind}"), total(f"dram_{kind}")
    group = "single_bit." if kind == "correctable" else "double_bit."
    parts = {k.removeprefix(group): v for k, v in raw.items() if k.startswith(group)}
    if not parts:
        return None, None
    dram = parts.get("device_memory")
    sram_parts = [v for k, v in parts.items() if k not in ("device_memory", "total")]
    return (sum(sram_parts) if sram_parts else None), dram


def _uncorrectable_where(raw: Mapping[str, int]) -> dict[str, int]:
    """The raw uncorrectable counters that are not zero, by location (totals left out)."""
    return {
        k: v
        for k, v in raw.items()
        if v and ("uncorr" in k or k.startswith("double")) and not k.endswith("total")
    }


@check(
    "gpu.ecc.volatile_uncorrectable",
    title="No uncorrectable ECC errors since the driver loaded",
    level=Level.QUICK,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=(
        f"{DRAIN.capitalize()}, reset the GPU (nvidia-smi -r -i <bus id>) to activate the row "
        "remap or page retirement, run dcgmi diag -r 3, and service the GPU if errors return."
    ),
    limits={"max": 0},
    source="GCM ecc_uncorrected_volatile_total (threshold 0), imbue, aznhc: any one fails",
)
def volatile_uncorrectable(ctx: Context) -> list[Outcome]:
    """Reads ``ecc.volatile.uncorrectable`` (SRAM + DRAM, or the double-bit total) per GPU."""
    limit = int(ctx.limit("max"))

    def body(gpu: Gpu) -> Outcome:
        n = gpu.ecc.volatile.uncorrectable
        if n is None:
            return unread(gpu, "ecc.volatile.uncorrectable", "volatile uncorrectable ECC")
        where = _uncorrectable_where(gpu.ecc.volatile.raw)
        if n > limit:
            return failed(
                gpu.subject,
                f"{n} uncorrectable ECC errors since the driver loaded",
                count=n,
                limit=limit,
                locations=where,
                target=target(gpu),
            )
        return passed(gpu.subject, "no uncorrectable ECC errors since the driver loaded", count=n)

    return per_gpu(ctx, body)


SRAM_REMEDY = "SRAM errors cannot be repaired: drain the node (<drain>) and service the GPU."
DRAM_REMEDY = (
    "DRAM errors are repaired by row remapping or page retirement: see gpu.row_remap / "
    "gpu.retired_pages."
)


@check(
    "gpu.ecc.aggregate_uncorrectable",
    title="Lifetime uncorrectable ECC errors: none in SRAM, DRAM ones repaired",
    level=Level.QUICK,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=SRAM_REMEDY + " " + DRAM_REMEDY,
    limits={"max_sram": 0, "max_dram": 0},
    source=(
        "aznhc azure_gpu_ecc.nhc: aggregate SRAM uncorrectable > 0 fails; DRAM: dolmen warns, "
        "the repair is judged by gpu.row_remap / gpu.retired_pages"
    ),
)
def aggregate_uncorrectable(ctx: Context) -> list[Outcome]:
    """Reads ``ecc.aggregate`` (lifetime, kept in the InfoROM) per GPU."""
    max_sram, max_dram = int(ctx.limit("max_sram")), int(ctx.limit("max_dram"))

    def body(gpu: Gpu) -> Outcome:
        counts = gpu.ecc.aggregate
        if counts.uncorrectable is None:
            return unread(gpu, "ecc.aggregate.uncorrectable", "aggregate uncorrectable ECC")
        sram, dram = split(counts, "uncorrectable")
        ev: dict[str, Any] = {
            "total": counts.uncorrectable,
            "sram": sram,
            "dram": dram,
            "locations": _uncorrectable_where(counts.raw),
        }
        if sram is not None and sram > max_sram:
            return failed(gpu.subject, f"{sram} lifetime uncorrectable SRAM ECC errors", **ev)
        if dram is None and sram is None and counts.uncorrectable > max_dram:
            dram = counts.uncorrectable  # a layout without locations: count it as memory
        if dram is not None and dram > max_dram:
            return warned(
                gpu.subject,
                f"{dram} lifetime uncorrectable DRAM ECC errors (repaired if gpu.row_remap or "
                "gpu.retired_pages pass)",
                remedy=DRAM_REMEDY,  # DRAM only: the drain of SRAM_REMEDY does not apply
                **ev,
            )
        return passed(
            gpu.subject, f"{counts.uncorrectable} lifetime uncorrectable ECC errors", **ev
        )

    return per_gpu(ctx, body)


@check(
    "gpu.ecc.volatile_correctable",
    title="Corrected ECC errors since the driver loaded stay below the published limits",
    level=Level.QUICK,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=(
        f"A GPU correcting this many errors is failing: {DRAIN}, run dcgmi diag -r 3 and "
        "service the GPU if the count keeps rising."
    ),
    limits={"max_dram": 20_000_000, "max_sram": 10_000, "max_total": 50_000_000},
    source=(
        "aznhc check_gpu_ecc 20000000 10000 (DRAM, SRAM); GCM ecc_corrected_volatile_total "
        "50,000,000 (boards without the SRAM/DRAM split)"
    ),
)
def volatile_correctable(ctx: Context) -> list[Outcome]:
    """Reads ``ecc.volatile.correctable`` and its SRAM/DRAM split per GPU."""
    limits = {k: int(ctx.limit(k)) for k in ("max_dram", "max_sram", "max_total")}

    def body(gpu: Gpu) -> Outcome:
        counts = gpu.ecc.volatile
        if counts.correctable is None:
            return unread(gpu, "ecc.volatile.correctable", "volatile corrected ECC")
        sram, dram = split(counts, "correctable")
        ev: dict[str, Any] = {
            "total": counts.correctable,
            "sram": sram,
            "dram": dram,
            "limits": limits,
        }
        over = []
        if sram is not None and sram > limits["max_sram"]:
            over.append(f"SRAM {sram} > {limits['max_sram']}")
        if dram is not None and dram > limits["max_dram"]:
            over.append(f"DRAM {dram} > {limits['max_dram']}")
        if sram is None and dram is None and counts.correctable > limits["max_total"]:
            over.append(f"total {counts.correctable} > {limits['max_total']}")
        if over:
            return failed(
                gpu.subject, f"corrected ECC errors above the limit: {', '.join(over)}", **ev
            )
        return passed(
            gpu.subject, f"{counts.correctable} corrected ECC errors since the driver loaded", **ev
        )

    return per_gpu(ctx, body)


@check(
    "gpu.ecc.mode",
    title="ECC is enabled on data-center GPUs and no ECC mode change waits for a reset",
    level=Level.QUICK,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy="Enable ECC (nvidia-smi -e 1 -i <bus id>) and reset the GPU or reboot to apply it.",
    source="NVIDIA: data-center GPUs ship with ECC on; a mode change applies at the next reset",
)
def ecc_mode(ctx: Context) -> list[Outcome]:
    """Reads ``ecc.mode`` (current) and ``ecc.mode_pending`` per GPU."""

    def body(gpu: Gpu) -> Outcome:
        mode, pending = gpu.ecc.mode, gpu.ecc.mode_pending
        if mode is None:
            return unread(gpu, "ecc.mode", "ECC mode")
        ev: dict[str, Any] = {"current": mode, "pending": pending, "brand": gpu.brand}
        if pending is not None and pending != mode:
            return warned(
                gpu.subject,
                f"ECC mode changes to {'enabled' if pending else 'disabled'} at the next GPU reset",
                remedy=f"Reset the GPU when it is idle (nvidia-smi -r -i {target(gpu)}) or reboot.",
                **ev,
            )
        if not mode and is_datacenter(gpu):
            return warned(
                gpu.subject,
                "ECC is disabled on a data-center GPU: memory errors go undetected",
                remedy=f"nvidia-smi -e 1 -i {target(gpu)}, then reset the GPU or reboot.",
                **ev,
            )
        if not mode:
            return skipped(gpu.subject, "ECC is disabled (a workstation or desktop board)", **ev)
        return passed(gpu.subject, "ECC is enabled", **ev)

    return per_gpu(ctx, body)


@check(
    "gpu.ecc.sram_threshold",
    title="The GPU has not exceeded its SRAM uncorrectable-error threshold",
    level=Level.QUICK,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=(
        f"{DRAIN.capitalize()}, collect nvidia-bug-report.sh and open a service case: SRAM "
        "errors past the threshold are not repairable in the field."
    ),
    source="nvidia-smi -q 'SRAM Threshold Exceeded' (Hopper+): past NVIDIA's RMA threshold",
)
def sram_threshold(ctx: Context) -> list[Outcome]:
    """Reads ``ecc.sram_threshold_exceeded`` per GPU."""

    def body(gpu: Gpu) -> Outcome:
        exceeded = gpu.ecc.sram_threshold_exceeded
        if exceeded is None:
            return unread(gpu, "ecc.sram_threshold_exceeded", "SRAM threshold flag")
        if exceeded:
            return failed(
                gpu.subject,
                "SRAM uncorrectable errors exceeded the GPU's threshold",
                target=target(gpu),
            )
        return passed(gpu.subject, "SRAM error threshold not exceeded")

    return per_gpu(ctx, body)
