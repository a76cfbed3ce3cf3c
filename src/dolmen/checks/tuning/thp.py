"""``tuning.thp``: transparent huge pages in madvise mode, as DGX OS sets them."""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, warned
from dolmen.checks.tuning import REMEDY_PROFILE, not_read


@check(
    "tuning.thp",
    title="Transparent huge pages are in madvise mode",
    level=Level.STANDARD,
    needs=("tuning",),
    remedy=REMEDY_PROFILE + " Or: echo madvise > /sys/kernel/mm/transparent_hugepage/enabled.",
    source="DGX OS nv-hugepage: transparent_hugepage=madvise (tuning-sources.md section 2.1)",
    gating=False,
)
def thp(ctx: Context) -> list[Outcome]:
    """Reads ``thp_enabled`` (the bracketed choice of the THP ``enabled`` file)."""
    t = ctx.tuning
    if t.thp_enabled is None:
        return [not_read(t.unread, "thp_enabled", "transparent huge pages")]
    if t.thp_enabled == "madvise":
        return [passed("host", "THP is madvise: huge pages where the framework asks for them")]
    why = {
        "always": "every large allocation is backed by huge pages, and khugepaged and "
        "compaction stalls hit latency-sensitive threads",
        "never": "frameworks that madvise() their buffers get no huge pages",
    }.get(t.thp_enabled, "an unusual mode")
    return [warned("host", f"THP is {t.thp_enabled}: {why}", thp_enabled=t.thp_enabled)]
