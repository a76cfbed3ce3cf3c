"""The cases whose conclusion validate does not reach today, per test function, grouped
by the reason: the issue-8 item (and the check) that owns them. Written by ``python -m
tests.recordings.regenerate`` (a run with ``--runxfail``: a case that passes leaves its group,
a still-failing one keeps its reason, a new failure comes in as "NEW, to review"); review its
diff, name the owner of each new one. The marks are strict: when a change makes a case pass,
its id must leave its group here (run the regenerator)."""

from __future__ import annotations


def _by_reason(groups: dict[str, tuple[str, ...]]) -> dict[str, str]:
    return {case: reason for reason, cases in groups.items() for case in cases}


UNDER_KEY = _by_reason({})

BARE = _by_reason({})

DRIVER_LOADED = _by_reason({})

NOTHING_INVENTED = _by_reason({})

ABSENCE_NAMED = _by_reason({})

XFAIL: dict[str, dict[str, str]] = {
    "under_key": UNDER_KEY,
    "bare": BARE,
    "driver_loaded": DRIVER_LOADED,
    "nothing_invented": NOTHING_INVENTED,
    "absence_named": ABSENCE_NAMED,
}
