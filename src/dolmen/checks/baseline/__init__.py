"""``baseline.*``: every deviation of this host from a known-good baseline (--baseline FILE)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dolmen.baseline import Baseline
    from dolmen.checks.context import Context


def baseline_of(ctx: Context) -> Baseline:
    """The baseline a ``baseline.*`` check compares with (typed as given, not Optional)."""
    assert ctx.baseline is not None  # guaranteed by when=("baseline",)
    return ctx.baseline
