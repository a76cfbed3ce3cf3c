"""How the GPU repairs its memory: page retirement (Kepler..Volta) and row remapping (Ampere+).

Each generation supports one of the two; the other reads N/A ("not supported") and
its check skips. A repair waiting for a reset (pending) leaves the bad memory in use
until the GPU is reset; a failed remap cannot be repaired in the field.
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.gpu.actions import DRAIN
from dolmen.checks.gpu.gpus import is_skippable, per_gpu, target, unread
from dolmen.checks.model import Level, Outcome, check, failed, passed, warned
from dolmen.host.gpu import Gpu


@check(
    "gpu.retired_pages",
    title="Retired memory pages stay below the limit and none waits for a reset",
    level=Level.QUICK,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=(
        f"{DRAIN.capitalize()} and reset the GPU (nvidia-smi -r -i <bus id>) or reboot to "
        "retire the pending pages; service the GPU when the retired count reaches the limit."
    ),
    limits={"fail_at": 63, "warn_above": 10},
    source=(
        "DCGM DCGM_LIMIT_MAX_RETIRED_PAGES 63 (soft limit 15); GCM gpu_retired_pages > 10 "
        "critical (dolmen warns); pending retirement: GCM critical, aznhc with >= 62 pages"
    ),
)
def retired_pages(ctx: Context) -> list[Outcome]:
    """Reads ``retired_pages`` (single-bit, double-bit counts and the pending flag) per GPU."""
    fail_at, warn_above = int(ctx.limit("fail_at")), int(ctx.limit("warn_above"))

    def body(gpu: Gpu) -> Outcome:
        rp = gpu.retired_pages
        if rp.sbe is None and rp.dbe is None:
            return unread(gpu, ("retired_pages.dbe", "retired_pages.sbe"), "retired pages")
        total = (rp.sbe or 0) + (rp.dbe or 0)
        ev: dict[str, Any] = {"sbe": rp.sbe, "dbe": rp.dbe, "total": total, "pending": rp.pending}
        ev |= {"fail_at": fail_at, "warn_above": warn_above}
        if total >= fail_at:
            return failed(
                gpu.subject,
                f"{total} retired pages: the retirement table is at its limit ({fail_at})",
                remedy=f"{DRAIN.capitalize()} and service the GPU: it cannot retire more pages.",
                **ev,
            )
        if rp.pending:
            return failed(
                gpu.subject,
                "a page retirement is pending: the bad page stays in use until the GPU is reset",
                remedy=(
                    f"{DRAIN.capitalize()}, then reset the GPU (nvidia-smi -r -i {target(gpu)}) "
                    "or reboot."
                ),
                **ev,
            )
        if total > warn_above:
            return warned(gpu.subject, f"{total} retired pages (more than {warn_above})", **ev)
        for key in ("retired_pages.sbe", "retired_pages.dbe"):
            if not is_skippable(gpu.unread.get(key, "not supported")):
                return unread(gpu, key, "retired pages")
        if rp.pending is None and "retired_pages.pending" in gpu.unread:
            return unread(gpu, "retired_pages.pending", "pending page retirement")
        return passed(gpu.subject, f"{total} retired pages, none pending", **ev)

    return per_gpu(ctx, body)


_ROW_KEYS = tuple(
    f"remapped_rows.{k}" for k in ("uncorrectable", "correctable", "pending", "failure")
)


@check(
    "gpu.row_remap",
    title="No row remap is pending or failed, and spare rows remain",
    level=Level.QUICK,
    needs=("gpu",),
    when=("nvidia_gpu",),
    remedy=(
        "Pending: reset the GPU when idle (nvidia-smi -r -i <bus id>). Failed: drain the "
        "node (<drain>) "
        "and service the GPU."
    ),
    limits={"max_uncorrectable": 512},
    source=(
        "NVIDIA A100/H100 GPU memory error management (row remapping); GCM and aznhc: pending "
        "or failure critical; aznhc uncorrectable remaps > 512"
    ),
)
def row_remap(ctx: Context) -> list[Outcome]:
    """Reads ``remapped_rows`` (counts, pending, failure, bank histogram) per GPU."""
    max_unc = int(ctx.limit("max_uncorrectable"))

    def body(gpu: Gpu) -> Outcome:
        rr = gpu.remapped_rows
        if rr.pending is None and rr.failure is None:
            return unread(gpu, ("remapped_rows.pending", "remapped_rows.failure"), "row remapping")
        ev: dict[str, Any] = {
            "correctable": rr.correctable,
            "uncorrectable": rr.uncorrectable,
            "pending": rr.pending,
            "failure": rr.failure,
            "histogram": dict(rr.histogram),
        }
        if rr.failure:
            return failed(
                gpu.subject,
                "a row remap failed: the GPU has memory it cannot repair",
                remedy=(
                    f"{DRAIN.capitalize()}, collect nvidia-bug-report.sh and service the GPU "
                    "(NVIDIA: a remap failure needs an RMA)."
                ),
                **ev,
            )
        if rr.pending:
            return failed(
                gpu.subject,
                "a row remap is pending: the faulty row stays in use until the GPU is reset",
                remedy=(
                    f"{DRAIN.capitalize()}, let jobs finish, reset the GPU "
                    f"(nvidia-smi -r -i {target(gpu)}), then check remapped_rows again."
                ),
                **ev,
            )
        if rr.uncorrectable is not None and rr.uncorrectable > max_unc:
            return warned(
                gpu.subject, f"{rr.uncorrectable} rows remapped for uncorrectable errors", **ev
            )
        exhausted = rr.histogram.get("none", 0)
        if exhausted:
            return warned(
                gpu.subject,
                f"{exhausted} memory banks have no spare row left: the next error there cannot "
                "be remapped",
                remedy="Plan to service the GPU; watch gpu.row_remap after each reset.",
                **ev,
            )
        for key in (*_ROW_KEYS, "remapped_rows.histogram"):
            if not is_skippable(gpu.unread.get(key, "not supported")):
                return unread(gpu, key, "row remapping counters")
        return passed(gpu.subject, "no row remap pending or failed", **ev)

    return per_gpu(ctx, body)
