"""``applicable_result``: ``common.result_of`` for the collective, storage and DCGM checks,
with one more case: a workload that does not apply here (``NotApplicable``: one GPU, no
dcgmi, no data mount) skips with its reason instead of being unknown."""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Outcome, skipped
from dolmen.checks.workload.common import result_of


def applicable_result(ctx: Context, name: str) -> tuple[Any, list[Outcome]]:
    """(the result of workload ``name``, []) or (None, [why not]); see the module docstring."""
    from dolmen.workloads.applicable import NotApplicable

    if ctx.workloads is not None:
        try:
            ctx.workloads.run(name)
        except NotApplicable as e:
            return None, [skipped("host", e.reason)]
        except Exception:
            pass  # result_of says what the others mean
    return result_of(ctx, name)
